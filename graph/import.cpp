#include "graph/import.h"
namespace fuseplan {
Graph import_model(const std::string& path, const ImportOptions&) { throw Error("import not implemented: " + path); }
Graph import_onnx_binary(std::string_view, const ImportOptions&, const std::string&) { throw Error("import not implemented"); }
Graph import_onnx_text(std::string_view, const ImportOptions&, const std::string&) { throw Error("import not implemented"); }
}
