// profiling/: run kernels, time them, write measurements (see profiling/README.md).
namespace fuseplan::profiling_detail { int placeholder = 0; }
