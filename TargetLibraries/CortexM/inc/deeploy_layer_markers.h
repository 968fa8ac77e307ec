/* Generated from Deeploy/runtime/abi.py by `python -m Deeploy.runtime.abi_headers`: do not edit.
 * Layer marker ids of the generated code, for runtimes without the cluster's ABI (CortexM). */
#ifndef DEEPLOY_LAYER_MARKERS_H
#define DEEPLOY_LAYER_MARKERS_H

#define DEEPLOY_MARKER_LAYER_END 0x0ff /* closes the last layer */
#define DEEPLOY_MARKER_LAYER_BASE 0x100 /* layer k starts at base + k */
#define DEEPLOY_MARKER_LAYER_COUNT 1792 /* layers that have a marker id */

#endif
