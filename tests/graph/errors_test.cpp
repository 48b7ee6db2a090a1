// Every bad input throws one fuseplan::Error line naming the problem.
#include <gtest/gtest.h>

#include "test_util.h"
#include "tests/onnx_bytes.h"

namespace fuseplan {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    std::string w = e.what();
    EXPECT_EQ(w.find('\n'), std::string::npos) << w;
    return w;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a fuseplan::Error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error";
  return "";
}

std::string file_error(const std::string& name, const std::string& bytes, ImportOptions o = test::opts(1)) {
  test::TempDir d;
  std::string p = d.write(name, bytes);
  return error_of([&] { import_model(p, o); });
}

const char* kGood = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N, 4] x) => (float[N, 4] y) { y = Relu(x) })";

TEST(ImportErrors, MissingFile) {
  EXPECT_NE(error_of([] { import_model("/nonexistent/dir/model.onnx", {}); }).find("cannot open"), std::string::npos);
}

TEST(ImportErrors, EmptyFile) {
  EXPECT_NE(file_error("e.onnx", "").find("empty"), std::string::npos);
  EXPECT_NE(file_error("e.onnxtxt", "").find("empty"), std::string::npos);
}

TEST(ImportErrors, TruncatedProtobuf) {
  std::ifstream f(test::models_dir() + "/mnist_wonnx.onnx", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  ASSERT_GT(bytes.size(), 1000u);
  std::string e = file_error("t.onnx", bytes.substr(0, bytes.size() / 2));
  EXPECT_FALSE(e.empty());
}

TEST(ImportErrors, RandomBytes) {
  std::string junk;
  uint32_t s = 12345;
  for (int i = 0; i < 4096; ++i) junk += static_cast<char>((s = s * 1103515245u + 12345u) >> 24);
  EXPECT_NE(file_error("r.onnx", junk).find("not a valid ONNX model"), std::string::npos);
}

// An ONNX op given fewer (or more) operands than its schema allows is refused
// at import. Regression: `y = Add(x)` imported, and the CPU and CUDA printers
// then read the missing second operand (segfault, rc 139).
TEST(ImportErrors, OperandCountAgainstTheOnnxSchema) {
  auto model = [](const std::string& node) {
    return "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[N, 4] x) => (float[N, 4] y) { " + node + " }";
  };
  auto ends = [](const std::string& e, const std::string& tail) { return e.ends_with(tail) ? "" : e; };
  EXPECT_EQ(ends(file_error("a.onnxtxt", model("y = Add(x)")),
                 ": node 'y' (Add): takes 2 inputs (ONNX schema at opset 17), got 1"), "");
  EXPECT_EQ(ends(file_error("r.onnxtxt", model("y = Relu(x, x, x)")),
                 ": node 'y' (Relu): takes 1 input (ONNX schema at opset 17), got 3"), "");
  EXPECT_EQ(ends(file_error("l.onnxtxt", model("y = LayerNormalization(x)")),
                 ": node 'y' (LayerNormalization): takes 2 to 3 inputs (ONNX schema at opset 17), got 1"), "");
  // Variadic ops and optional trailing operands stay accepted.
  test::TempDir d;
  EXPECT_NO_THROW(import_model(d.write("s.onnxtxt", model("y = Sum(x, x, x)")), test::opts(1)));
  EXPECT_NO_THROW(import_model(d.write("c.onnxtxt", model("y = Clip(x)")), test::opts(1)));
}

// A constant Gather index outside [-d, d) is an error in ONNX; it was
// accepted and the kernels clamped it (run --verify agreed with itself).
TEST(ImportErrors, ConstantGatherIndexOutOfRange) {
  auto model = [](const std::string& index) {
    return "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[N, 4] x) => (float[N, 1] y) {\n"
           "  i = Constant<value = int64[1] {" + index + "}>()\n  y = Gather<axis = 1>(x, i)\n}";
  };
  for (const std::string index : {"1000", "4", "-5", "-1000000"}) {
    const std::string e = file_error("g.onnxtxt", model(index));
    EXPECT_TRUE(e.ends_with(": node 'y' (Gather): index " + index + " is out of range for axis 1 of size 4")) << e;
  }
  test::TempDir d;
  EXPECT_NO_THROW(import_model(d.write("ok.onnxtxt", model("-4")), test::opts(1)));
  EXPECT_NO_THROW(import_model(d.write("ok3.onnxtxt", model("3")), test::opts(1)));
}

// Issue 33 row 14: TopK with k larger than its axis imported with the
// axis length as output shape; ONNX requires 0 <= k <= the axis length.
TEST(ImportErrors, TopKBeyondItsAxisIsRefused) {
  auto model = [](const std::string& k) {
    return "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[3, 4] x) => (float[3, " + k +
           "] v, int64[3, " + k + "] i) {\n  k = Constant<value = int64[1] {" + k + "}>()\n  v, i = TopK(x, k)\n}";
  };
  for (const std::string k : {"9", "5", "-1"}) {
    const std::string e = file_error("t.onnxtxt", model(k));
    EXPECT_TRUE(e.ends_with(": node 'v' (TopK): TopK k = " + k + " is outside [0, 4], the length of axis 1 of input "
                            "f32[3,4]")) << e;
  }
  test::TempDir d;
  for (const std::string k : {"4", "1", "0"}) {
    Graph g = import_model(d.write("ok.onnxtxt", model(k)), test::opts(1));
    EXPECT_EQ(g.node(g.find("v")).out.shape, (std::vector<int64_t>{3, std::stoll(k)}));
  }
}

using test::field;
using test::nested_if_text;
using test::varint;

// A binary ModelProto g(bool c, float[4] x) => (float y) whose If
// then_branch nests `depth` levels deep (each branch: y = If(c), the
// innermost y = Identity(x)).
std::string nested_if_binary(int depth) {
  std::string graph = field(1, field(1, "x") + field(2, "y") + field(4, "Identity"));  // GraphProto.node
  for (int level = 0; level < depth; ++level) {
    const std::string attr = field(1, "then_branch") + field(6, graph) + varint(20 << 3) + varint(5);  // type GRAPH
    graph = field(1, field(1, "c") + field(2, "y") + field(4, "If") + field(5, attr));
  }
  auto value_info = [](const std::string& name, int elem_type, const std::string& shape) {
    return field(1, name) + field(2, field(1, varint(1 << 3) + varint(elem_type) + shape));  // type.tensor_type
  };
  const std::string dim4 = field(1, varint(1 << 3) + varint(4));  // TensorShapeProto.dim {dim_value: 4}
  graph += field(11, value_info("c", 9, field(2, ""))) + field(11, value_info("x", 1, field(2, dim4))) +
           field(12, value_info("y", 1, ""));
  return varint(1 << 3) + varint(8) + field(8, field(1, "") + varint(2 << 3) + varint(17)) + field(7, graph);
}

// Issue 33 row 2: ONNX text nesting If 5000 deep crashed the text parser
// (SIGSEGV, stack overflow). Every recursion over subgraphs is bounded by
// kMaxSubgraphDepth, refused by name at loading in either format.
TEST(ImportErrors, SubgraphsNestedPastTheLimitAreRefusedInEitherFormat) {
  const std::string msg = "model nests subgraphs deeper than " + std::to_string(kMaxSubgraphDepth);
  for (int depth : {kMaxSubgraphDepth + 1, 5000}) {
    SCOPED_TRACE(depth);
    EXPECT_NE(error_of([&] { test::import_text(nested_if_text(depth)); }).find(msg), std::string::npos);
    EXPECT_NE(error_of([&] { import_onnx_binary(nested_if_binary(depth), {}); }).find(msg), std::string::npos);
  }
  // At the limit both formats import: the binary one past protobuf's default
  // limit of 100 nested messages (3 per level).
  EXPECT_NE(test::import_text(nested_if_text(kMaxSubgraphDepth)).find("y0"), kNoNode);
  EXPECT_NE(import_onnx_binary(nested_if_binary(kMaxSubgraphDepth), {}).find("y"), kNoNode);
  // Deep brackets that are no subgraphs (nested sequence types) are refused
  // before the parser too.
  std::string type = "float";
  for (int k = 0; k < 5000; ++k) type = "seq(" + type + ")";
  const std::string e = error_of([&] {
    test::import_text("<ir_version: 8, opset_import: [\"\" : 17]>\ng (" + type + " x) => (float[4] y) { y = Relu(x) }");
  });
  EXPECT_NE(e.find("ONNX text syntax error: brackets nested deeper than"), std::string::npos) << e;
}

// A binary ModelProto (opset 17) of float[4] inputs and outputs and nodes
// {op, inputs, outputs, name}, names given byte for byte.
struct WireNode { std::string op; std::vector<std::string> in, out; std::string name; };
std::string wire_model(const std::vector<std::string>& inputs, const std::vector<WireNode>& nodes,
                       const std::vector<std::string>& outputs) {
  auto value_info = [](const std::string& name) {
    const std::string dim4 = field(1, varint(1 << 3) + varint(4));
    return field(1, name) + field(2, field(1, varint(1 << 3) + varint(1) + field(2, dim4)));
  };
  std::string graph;
  for (const auto& n : nodes) {
    std::string node;
    for (const auto& i : n.in) node += field(1, i);
    for (const auto& o : n.out) node += field(2, o);
    graph += field(1, node + field(3, n.name) + field(4, n.op));
  }
  for (const auto& i : inputs) graph += field(11, value_info(i));
  for (const auto& o : outputs) graph += field(12, value_info(o));
  return varint(1 << 3) + varint(8) + field(8, field(1, "") + varint(2 << 3) + varint(17)) + field(7, graph);
}

// Issue 33 rows 6 and 11: a tensor name with byte 0xFF imported and broke
// every JSON output (nlohmann type_error.316); ESC sequences and newlines
// reached terminals raw. Every model-supplied string is escaped at loading
// (escape_name), and two names that escape alike are refused.
TEST(ImportErrors, ModelNamesAreEscapedAndStayDistinct) {
  const std::string x = "x\xFF", e = "e\x1B[31m\x1B]0;title\x07", y = "y\nnew";
  Graph g = import_onnx_binary(
      wire_model({x}, {{"Relu", {x}, {e}, "relu\n1"}, {"Op\x1B[1m", {e}, {y}, "odd"}}, {y}), {});
  EXPECT_NE(g.find("x\\xFF"), kNoNode);
  EXPECT_NE(g.find("e\\x1B[31m\\x1B]0;title\\x07"), kNoNode);
  ASSERT_NE(g.find("y\\x0Anew"), kNoNode);
  EXPECT_EQ(g.node(g.find("y\\x0Anew")).op, "Op\\x1B[1m");  // an unknown op's name too
  for (NodeId v = 0; v < g.size(); ++v)
    for (const std::string* s : {&g.node(v).name, &g.node(v).origin, &g.node(v).op, &g.node(v).onnx_op})
      for (unsigned char c : *s) EXPECT_TRUE(c >= 0x20 && c < 0x7F) << *s;
  for (const auto& w : g.warnings)
    for (unsigned char c : w) EXPECT_TRUE(c >= 0x20 && c != 0x7F) << w;
  // "a\xFF" escapes to the literal text of the other name.
  const std::string err = error_of([] {
    import_onnx_binary(wire_model({"a\xFF", "a\\xFF"}, {{"Add", {"a\xFF", "a\\xFF"}, {"y"}, ""}}, {"y"}), {});
  });
  EXPECT_NE(err.find("two tensor names read 'a\\xFF' once their non-printable bytes are escaped as \\xNN; rename one"),
            std::string::npos) << err;
}

TEST(ImportErrors, TextSyntaxError) {
  std::string e = file_error("s.onnxtxt", "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[N] x) => (float[N] y) {\n y = Relu(x\n}");
  EXPECT_NE(e.find("syntax error"), std::string::npos) << e;
}

TEST(ImportErrors, Cycle) {
  std::string e = error_of([] {
    test::import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) { a = Add(x, b)
 b = Relu(a)
 y = Relu(b) })");
  });
  EXPECT_NE(e.find("cycle"), std::string::npos) << e;
}

TEST(ImportErrors, DanglingTensor) {
  std::string e = error_of([] {
    test::import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) { y = Add(x, ghost) })");
  });
  EXPECT_NE(e.find("'ghost'"), std::string::npos) << e;
}

TEST(ImportErrors, UnboundDim) {
  std::string e = error_of([] {
    test::import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N, seq] x) => (float[N, seq] y) { y = Relu(x) })", test::opts(1));
  });
  EXPECT_NE(e.find("unbound symbolic dim 'seq' of input 'x' (use --dim seq=V; --batch binds only the batch dim 'N' of "
                   "'x')"),
            std::string::npos)
      << e;
}

TEST(ImportErrors, NegativeDim) {
  std::string e = error_of([] {
    test::import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[2, 2] y) { s = Constant<value = int64[2] {-2, -2}>()
 y = Reshape(x, s) })");
  });
  EXPECT_NE(e.find("negative"), std::string::npos) << e;
  EXPECT_NE(error_of([] { test::import_text(kGood, test::opts(-3)); }).find("invalid batch"), std::string::npos);
}

// Regression: a weight whose spatial dims differ from kernel_shape was
// accepted (output shape from kernel_shape, FLOPs from the weight), and the
// CPU backend aborted on it with std::bad_alloc.
TEST(ImportErrors, ConvWeightDisagreesWithKernelShape) {
  std::string e = error_of([] {
    test::import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 4, 8, 8] x, float[4, 4, 300, 300] w) => (float[1, 4, 8, 8] y) {
 y = Conv<kernel_shape = [3, 3], pads = [1, 1, 1, 1]>(x, w) })");
  });
  EXPECT_NE(e.find("kernel_shape [3,3] differs from the weight's spatial dims [300,300]"), std::string::npos) << e;
}

TEST(ImportErrors, Overflow) {
  std::string e = error_of([] {
    test::import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N, M, K] x) => (float[N, M, K] y) { y = Relu(x) })",
                      test::opts(std::nullopt, {{"N", 1LL << 40}, {"M", 1LL << 20}, {"K", 1LL << 10}}));
  });
  EXPECT_NE(e.find("overflows"), std::string::npos) << e;
}

TEST(ImportErrors, OpsetTooNew) {
  std::string e = error_of([] {
    test::import_text(R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[4] x) => (float[4] y) { y = Relu(x) })");
  });
  EXPECT_NE(e.find("opset 23"), std::string::npos) << e;
  EXPECT_NO_THROW(test::import_text(R"(<ir_version: 10, opset_import: ["" : 22]>
g (float[4] x) => (float[4] y) { y = Relu(x) })"));
}

TEST(ImportErrors, BadShapesInNodes) {
  std::string e = error_of([] {
    test::import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[4, 3] a, float[5, 2] b) => (float[4, 2] y) { y = MatMul(a, b) })");
  });
  EXPECT_NE(e.find("node 'y' (MatMul)"), std::string::npos) << e;
}

TEST(ImportErrors, UnknownOpIsNotAnError) {
  Graph g = test::import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) { a = FancyNewOp(x)
 b = FancyNewOp(a)
 y = Relu(x) })");
  EXPECT_EQ(g.warnings.size(), 2u);  // one for the op type, one for its unknown-shape region
  EXPECT_EQ(test::count_class(g, OpClass::opaque), 2);
}

}  // namespace
}  // namespace fuseplan
