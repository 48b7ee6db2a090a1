#include "exec/tensor_data.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "graph/op_attrs.h"
#include "support/input_file.h"

namespace fuseplan {

Tensor::Tensor(DType t, std::vector<int64_t> s) : dtype(t), shape(std::move(s)) {
  int64_t b = dtype_bytes(t);
  if (b == 0) throw Error("cannot hold tensors of dtype " + std::string(to_string(t)));
  data.resize(static_cast<std::size_t>(numel() * b));
}

int64_t Tensor::numel() const {
  // An empty tensor's other dims may be anything (an .npy header's (0, 2^40,
  // 2^40)): its product never overflows on the way to 0.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

double Tensor::get(int64_t i) const {
  switch (dtype) {
    case DType::f32: return ptr<float>()[i];
    case DType::f64: return ptr<double>()[i];
    case DType::i64: return static_cast<double>(ptr<int64_t>()[i]);
    case DType::i32: return ptr<int32_t>()[i];
    case DType::i16: return ptr<int16_t>()[i];
    case DType::i8: return ptr<int8_t>()[i];
    case DType::u8: return ptr<uint8_t>()[i];
    case DType::boolean: return ptr<uint8_t>()[i] ? 1.0 : 0.0;
    default: throw Error("cannot read tensors of dtype " + std::string(to_string(dtype)));
  }
}

namespace {

uint64_t name_seed(const std::string& s) {  // FNV-1a 64: stable across runs and platforms
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Upper bound (exclusive) of valid values for an int64 source, from the
// consumers that index with it (looking through Reshape/Identity/Cast).
int64_t index_bound(const Graph& g, NodeId n, int depth = 0) {
  int64_t bound = 0;
  for (NodeId c : g.consumers(n)) {
    const Primitive& p = g.node(c);
    auto ops = g.operands(c);
    int64_t b = 0;
    if ((p.kind == Op::Gather || p.kind == Op::GatherElements) && ops.size() > 1 && ops[1] == n) {
      const auto& ds = g.node(ops[0]).out.shape;
      int64_t ax = p.attr_int("axis", 0);
      if (ax >= 0 && ax < static_cast<int64_t>(ds.size())) b = ds[ax];
    } else if (p.kind == Op::OneHot) {
      b = p.attr_int("depth", 0);
    } else if ((p.kind == Op::Reshape || p.kind == Op::Identity || p.kind == Op::Cast) && depth < 8) {
      b = index_bound(g, c, depth + 1);
    }
    if (b > 0) bound = bound == 0 ? b : std::min(bound, b);
  }
  return bound;
}

// fan_in of a weight: product of all dims but the first (conv [M,C,k..]) or the
// first dim of a 2-D matrix read as MatMul operand 1 ([K,N]).
double fan_in(const Graph& g, NodeId n) {
  const auto& s = g.node(n).out.shape;
  if (s.empty()) return 1;
  for (NodeId c : g.consumers(n)) {
    const Primitive& p = g.node(c);
    auto ops = g.operands(c);
    if (p.kind == Op::MatMul && ops.size() > 1 && ops[1] == n && s.size() >= 2)
      return static_cast<double>(p.attr_int("transB", 0) ? s.back() : s[s.size() - 2]);
  }
  double f = 1;
  for (std::size_t i = 1; i < s.size(); ++i) f *= static_cast<double>(s[i]);
  return s.size() == 1 ? 1 : f;
}

template <class T>
void fill_from(Tensor& t, const ConstData& d) {
  T* p = t.ptr<T>();
  int64_t n = t.numel();
  if (!d.fill && static_cast<int64_t>(d.f32.empty() ? d.i64.size() : d.f32.size()) != n)
    throw Error("constant data size mismatch");
  // const_element: the conversion the backends' immediates use too (graph/op_attrs.h).
  for (int64_t i = 0; i < n; ++i) p[i] = const_element<T>(d, i);
}

void fill_known(Tensor& t, const Primitive& p) {
  switch (t.dtype) {
    case DType::f32: fill_from<float>(t, p.data); break;
    case DType::f64: fill_from<double>(t, p.data); break;
    case DType::i64: fill_from<int64_t>(t, p.data); break;
    case DType::i32: fill_from<int32_t>(t, p.data); break;
    case DType::i8: fill_from<int8_t>(t, p.data); break;
    case DType::u8: fill_from<uint8_t>(t, p.data); break;
    case DType::boolean: fill_from<uint8_t>(t, p.data); break;
    default: throw Error("cannot hold data of '" + p.name + "' (" + std::string(to_string(t.dtype)) + ")");
  }
  if (t.dtype == DType::boolean)
    for (int64_t i = 0; i < t.numel(); ++i) t.ptr<uint8_t>()[i] = t.ptr<uint8_t>()[i] ? 1 : 0;
}

void fill_random(Tensor& t, const Graph& g, NodeId n) {
  const Primitive& p = g.node(n);
  std::mt19937_64 rng(name_seed(p.name));
  int64_t m = t.numel();
  switch (t.dtype) {
    case DType::f32:
    case DType::f64: {
      double scale = p.source == SourceKind::weight ? 1.0 / std::sqrt(fan_in(g, n)) : 1.0;
      std::uniform_real_distribution<double> u(-1.0, 1.0);
      for (int64_t i = 0; i < m; ++i) {
        double v = u(rng) * scale;
        if (t.dtype == DType::f32) t.ptr<float>()[i] = static_cast<float>(v);
        else t.ptr<double>()[i] = v;
      }
      break;
    }
    case DType::i64:
    case DType::i32: {
      int64_t b = index_bound(g, n);
      std::uniform_int_distribution<int64_t> u(0, (b > 0 ? b : 10) - 1);
      for (int64_t i = 0; i < m; ++i) {
        if (t.dtype == DType::i64) t.ptr<int64_t>()[i] = u(rng);
        else t.ptr<int32_t>()[i] = static_cast<int32_t>(u(rng));
      }
      break;
    }
    case DType::i8:
    case DType::u8:
    case DType::boolean: {
      std::uniform_int_distribution<int> u(t.dtype == DType::i8 ? -128 : 0, t.dtype == DType::boolean ? 1 : 127);
      for (int64_t i = 0; i < m; ++i) t.ptr<uint8_t>()[i] = static_cast<uint8_t>(u(rng));
      break;
    }
    default: throw Error("cannot generate data for '" + p.name + "' of dtype " + std::string(to_string(t.dtype)));
  }
}

}  // namespace

bool feedable(const Primitive& p) {
  return p.source == SourceKind::graph_input || (p.source == SourceKind::weight && p.data.empty());
}

void check_feedable(const Graph& g, const std::string& name) {
  const NodeId n = g.find(name);
  const std::string head = "--inputs names '" + name + "', ";
  if (n == kNoNode) throw Error(head + "which is no tensor of the model");
  const Primitive& p = g.node(n);
  if (feedable(p)) return;
  if (p.source == SourceKind::weight || p.source == SourceKind::constant)
    throw Error(head + "a " + (p.source == SourceKind::weight ? "weight" : "constant") +
                " whose data the model holds (an initializer); change the model to change it");
  throw Error(head + "a tensor the model computes (op " + p.op + "), not a graph input");
}

std::map<NodeId, Tensor> make_source_data(const Graph& g, const std::map<std::string, Tensor>& inputs) {
  std::map<NodeId, Tensor> out;
  for (NodeId n = 0; n < g.size(); ++n) {
    const Primitive& p = g.node(n);
    if (p.op_class != OpClass::source) continue;
    Tensor t(p.out.dtype, p.out.shape);
    auto it = inputs.find(p.name);
    if (it != inputs.end() && feedable(p)) {
      if (it->second.dtype != t.dtype || it->second.shape != t.shape)
        throw Error("input '" + p.name + "' expects " + p.out.str() + ", the file holds " +
                    TensorType{it->second.dtype, it->second.shape}.str());
      t = it->second;
    } else if (!p.data.empty()) {
      fill_known(t, p);
    } else {
      fill_random(t, g, n);
    }
    out.emplace(n, std::move(t));
  }
  return out;
}

// ---------------------------------------------------------------- .npy
// Format (numpy.lib.format): magic "\x93NUMPY", major, minor version bytes,
// header length (uint16 LE for v1, uint32 LE for v2/v3), then an ASCII
// Python dict {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and '\n', then the raw C-order data.
namespace {

struct NpyDtype {
  const char* descr;
  DType dtype;
};
constexpr NpyDtype kNpyDtypes[] = {{"<f4", DType::f32}, {"<i8", DType::i64}, {"|b1", DType::boolean},
                                   {"|i1", DType::i8},  {"|u1", DType::u8},  {"<f8", DType::f64},
                                   {"<i4", DType::i32}};

std::string dict_value(const std::string& h, const std::string& key, const std::string& path) {
  auto k = h.find("'" + key + "'");
  if (k == std::string::npos) throw Error(path + ": .npy header lacks '" + key + "'");
  auto c = h.find(':', k);
  if (c == std::string::npos) throw Error(path + ": malformed .npy header");
  std::size_t b = h.find_first_not_of(' ', c + 1);
  if (b == std::string::npos) throw Error(path + ": malformed .npy header");
  std::size_t e;
  if (h[b] == '(') e = h.find(')', b) + 1;
  else if (h[b] == '\'') e = h.find('\'', b + 1) + 1;
  else e = h.find_first_of(",}", b);
  if (e == std::string::npos || e == 0) throw Error(path + ": malformed .npy header");
  return h.substr(b, e - b);
}

}  // namespace

Tensor read_npy(const std::string& path) {
  const std::string bytes = read_input_file(path, ".npy input", kMaxDataFileBytes);
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw Error(path + ": not a .npy file");
  int major = static_cast<unsigned char>(bytes[6]);
  std::size_t hl, pos;
  if (major == 1) {
    hl = static_cast<unsigned char>(bytes[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    pos = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error(path + ": truncated .npy header");
    hl = 0;
    for (int i = 0; i < 4; ++i) hl |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    pos = 12;
  } else {
    throw Error(path + ": unsupported .npy version " + std::to_string(major));
  }
  if (bytes.size() < pos + hl) throw Error(path + ": truncated .npy header");
  std::string h = bytes.substr(pos, hl);
  pos += hl;
  std::string descr = dict_value(h, "descr", path);
  if (descr.size() < 2) throw Error(path + ": malformed .npy descr");
  descr = descr.substr(1, descr.size() - 2);
  DType dt = DType::unknown;
  for (const auto& d : kNpyDtypes)
    if (descr == d.descr) dt = d.dtype;
  if (dt == DType::unknown) throw Error(path + ": unsupported .npy dtype '" + descr + "' (want <f4, <i8, |b1, |i1, |u1)");
  if (dict_value(h, "fortran_order", path) != "False") throw Error(path + ": Fortran-order .npy is not supported");
  std::string sh = dict_value(h, "shape", path);
  std::vector<int64_t> shape;
  for (std::size_t i = 1; i + 1 < sh.size();) {
    std::size_t j = sh.find_first_of(",)", i);
    std::string tok = sh.substr(i, j - i);
    tok.erase(0, tok.find_first_not_of(' '));
    if (!tok.empty()) {
      tok.erase(tok.find_last_not_of(' ') + 1);
      std::size_t used = 0;
      try {
        shape.push_back(std::stoll(tok, &used));
      } catch (...) {
        throw Error(path + ": malformed .npy shape " + sh);
      }
      if (used != tok.size()) throw Error(path + ": malformed .npy shape " + sh);
      if (shape.back() < 0) throw Error(path + ": negative .npy dimension");
    }
    if (j == std::string::npos) break;
    i = j + 1;
  }
  // Check the shape against the data the file holds before allocating: a
  // header may declare any shape, the data bytes bound what is real.
  const std::size_t have = bytes.size() - pos;
  std::size_t need = static_cast<std::size_t>(dtype_bytes(dt));
  bool more = false;  // the product exceeds the bytes held (and may overflow)
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) need = 0;
  for (int64_t d : shape) {
    if (more || need == 0) break;
    if (need > have / static_cast<std::size_t>(d)) more = true;
    else need *= static_cast<std::size_t>(d);
  }
  if (more || need != have)
    throw Error(path + ": .npy holds " + std::to_string(have) + " data bytes, shape " + sh + " needs " +
                (more ? "more" : std::to_string(need)));
  Tensor t(dt, shape);
  if (!t.data.empty()) std::memcpy(t.data.data(), bytes.data() + pos, t.data.size());  // an empty vector's data() may be null
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  const char* descr = nullptr;
  for (const auto& d : kNpyDtypes)
    if (d.dtype == t.dtype) descr = d.descr;
  if (!descr) throw Error("cannot write dtype " + std::string(to_string(t.dtype)) + " to .npy");
  std::ostringstream h;
  h << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < t.shape.size(); ++i) h << t.shape[i] << (t.shape.size() == 1 || i + 1 < t.shape.size() ? "," : "");
  h << "), }";
  std::string hs = h.str();
  while ((10 + hs.size() + 1) % 64 != 0) hs += ' ';
  hs += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error("cannot write '" + path + "'");
  f.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {static_cast<char>(hs.size() & 0xff), static_cast<char>(hs.size() >> 8)};
  f.write(len, 2);
  f.write(hs.data(), static_cast<std::streamsize>(hs.size()));
  f.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(t.data.size()));
  if (!f) throw Error("cannot write '" + path + "'");
}

std::map<std::string, Tensor> load_inputs(const std::string& spec) {
  namespace fs = std::filesystem;
  std::map<std::string, Tensor> out;
  if (fs::is_directory(spec)) {
    for (const auto& e : fs::directory_iterator(spec))
      if (e.path().extension() == ".npy") out[e.path().stem().string()] = read_npy(e.path().string());
    return out;
  }
  std::map<std::string, std::string> files;  // input name -> the item that gave it
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) throw Error("--inputs wants a directory or NAME=FILE.npy[,...], got '" + item + "'");
    const std::string name = item.substr(0, eq);
    if (auto [it, fresh] = files.emplace(name, item); !fresh)
      throw Error("--inputs: input '" + name + "' given twice ('" + it->second + "' and '" + item + "')");
    out[name] = read_npy(item.substr(eq + 1));
  }
  return out;
}

}  // namespace fuseplan
