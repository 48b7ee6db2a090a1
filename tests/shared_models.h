// Dims each shared model needs beyond --batch (sequence lengths, image
// sizes, past lengths), shared by every test that imports ../shared/models.
#pragma once

#include <cstdint>
#include <filesystem>
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "graph/import.h"

namespace fuseplan::test {

inline std::string shared_models_dir() { return std::string(FUSEPLAN_SHARED_DIR) + "/models/onnx"; }

inline std::map<std::string, int64_t> model_dims(const std::string& file) {
  if (file.find("roberta") != std::string::npos) return {{"seq_len", 128}};
  if (file.find("t5-encoder") != std::string::npos || file.find("distilbert") != std::string::npos)
    return {{"sequence", 128}};
  if (file.find("gpt2-") != std::string::npos)
    return {{"input1_dynamic_axes_2", 1}, {"input1_dynamic_axes_3", 128}};
  if (file.find("fcn-resnet") != std::string::npos) return {{"height", 224}, {"width", 224}};
  if (file.find("tiny-yolov3") != std::string::npos) return {{"input_1:2", 416}, {"input_1:3", 416}};
  if (file.find("gpt2_tiny") != std::string::npos)
    return {{"seq_len", 16}, {"past_seq_len", 16}, {"total_seq_len", 32}};
  // [S,B,100] x Transpose -> [100,B,S] is only consistent when B == S == 100.
  if (file.find("attention_head") != std::string::npos) return {{"sequence_len", 100}, {"batch", 100}};
  return {};
}

/// A gtest parameter name for a model file: its stem, non-alphanumerics as '_'.
inline std::string model_test_name(const std::string& file) {
  std::string n;
  for (char c : std::filesystem::path(file).stem().string()) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return n;
}

/// File names of the shared .onnx models, sorted; none where the folder is
/// missing (a clone without ../shared: the suites built from this list are
/// then empty, GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST). Iterating a
/// missing folder threw while gtest listed the tests, and the test build
/// failed.
inline std::vector<std::string> shared_model_files() {
  std::vector<std::string> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(shared_models_dir(), ec)) return out;
  for (const auto& e : std::filesystem::directory_iterator(shared_models_dir()))
    if (e.path().extension() == ".onnx") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

/// Imports shared model `file` at `batch` with its dims; throws Error as
/// import_model does.
inline Graph import_shared_model(const std::string& file, int64_t batch) {
  ImportOptions io;
  io.batch = batch;
  io.dims = model_dims(file);
  return import_model(shared_models_dir() + "/" + file, io);
}

}  // namespace fuseplan::test
