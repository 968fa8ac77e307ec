/* Example firmware: two networks compiled by Deeploy, each with its own --name, linked into one
 * program. Each network exports only names carrying its prefix (kws_RunNetwork, resnet_inputs,
 * KWS_ARENA_L2_BYTES...), so they coexist; their arenas are separate, so one network's inference
 * never disturbs the other's outputs.
 *
 *   deeploy compile kws.onnx    --platform Generic --name kws    -o nets/kws
 *   deeploy compile resnet.onnx --platform Generic --name resnet -o nets/resnet
 *   cmake -S docs/examples/firmware -B build -DDEEPLOY_NETWORKS=$PWD/nets -DDEEPLOY_SAMPLES=<folder of samples.h>
 *   cmake --build build && ./build/firmware
 *
 * samples.h holds one input for each network (kws_sample, resnet_sample); a real firmware takes
 * them from its sensors instead. The program prints every output element, one line per output. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kws.h"    /* each compiled folder's <name>.h, found through its library (add_subdirectory) */
#include "resnet.h"
#include "samples.h"

#ifdef KWS_USER_ARENA
/* The keyword network was compiled with KWS_USER_ARENA (see CMakeLists.txt): the program provides
 * its activation arena. On a target, put it in the memory of its level with a section attribute. */
uint8_t kws_arena_L2[KWS_ARENA_L2_BYTES] __attribute__((aligned(16)));
#endif

#define PRINT_OUTPUT(label, data, size)                  \
    do {                                                 \
        printf("%s:", label);                            \
        for (uint32_t i = 0; i < (size); i++)            \
            printf(" %ld", (long)(data)[i]);             \
        printf("\n");                                    \
    } while (0)

int main(void) {
    kws_InitNetwork();
    resnet_InitNetwork();

    /* typed access: KWS_INPUT_0 is a (KWS_INPUT_0_TYPE *) to KWS_INPUT_0_SIZE elements */
    memcpy(KWS_INPUT_0, kws_sample, KWS_INPUT_0_BYTES);
    kws_RunNetwork();
    memcpy(RESNET_INPUT_0, resnet_sample, RESNET_INPUT_0_BYTES);
    resnet_RunNetwork();

    PRINT_OUTPUT("kws output 0", KWS_OUTPUT_0, KWS_OUTPUT_0_SIZE);
    PRINT_OUTPUT("resnet output 0", RESNET_OUTPUT_0, RESNET_OUTPUT_0_SIZE);
    printf("arenas: kws L2 %u B, resnet L2 %u B\n", (unsigned)KWS_ARENA_L2_BYTES, (unsigned)RESNET_ARENA_L2_BYTES);
    return 0;
}
