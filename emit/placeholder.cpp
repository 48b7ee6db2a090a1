// emit/: plan JSON, Graphviz DOT and kernel source (see emit/README.md).
namespace fuseplan::emit_detail { int placeholder = 0; }
