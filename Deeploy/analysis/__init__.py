"""Reports on a compiled network: code and memory size of a build (``sizes``) and the roofline
(``roofline``, ``traffic``, ``roofline_plot``)."""
