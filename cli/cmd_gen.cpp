// fuseplan gen: writes a synthetic model (stacked transformer blocks, ResNet-like
// conv blocks, or both) with an exact primitive count, for scaling benchmarks.
#include <iostream>

#include "cli/common.h"
#include "support/files.h"
#include "graph/synthetic.h"

namespace fuseplan::cli {

namespace {
struct GenArgs {
  std::string kind = "transformer";
  int64_t primitives = 1000;
  std::string out;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void run_gen(const GenArgs& a) {
  const SyntheticKind kind = synthetic_kind_from_string(a.kind);
  const bool text = ends_with(a.out, ".onnxtxt");
  if (!text && !ends_with(a.out, ".onnx"))
    throw Error("-o " + a.out + ": the file name must end in .onnx (binary) or .onnxtxt (text)");
  check_output_file(a.out);
  const std::string bytes = text ? synthetic_onnx_text(kind, a.primitives) : synthetic_onnx_binary(kind, a.primitives);
  write_file_atomic(a.out, bytes);
  std::cout << "wrote " << a.out << ": " << a.kind << ", " << a.primitives << " primitives, " << fmt_bytes(bytes.size())
            << "\n";
}
}  // namespace

void add_gen(CLI::App& app) {
  auto args = std::make_shared<GenArgs>();
  auto* cmd = app.add_subcommand("gen", "write a synthetic model with an exact primitive count (benchmarks)");
  cmd->add_option("--kind", args->kind, "transformer | conv | mixed (default transformer)");
  cmd->add_option("--primitives", args->primitives, "primitives after import (default 1000)")->required();
  cmd->add_option("-o,--output", args->out, "FILE.onnx or FILE.onnxtxt")->required()->check(file_name());
  cmd->callback([args] { run_gen(*args); });
}

}  // namespace fuseplan::cli
