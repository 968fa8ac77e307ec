"""The ABI between generated code and the cluster runtime library (TargetLibraries/Siracusa):
marker ids and tile tables, defined once here and generated into the C headers."""
