// Constant tensor values: reading ONNX TensorProto (initializers, Constant
// node values), the Const helpers, and node attribute access.
#include <cmath>
#include <cstring>

#include "graph/import_internal.h"

namespace fuseplan::detail {

bool Const::is_float() const {
  switch (type.dtype) {
    case DType::f32: case DType::f16: case DType::bf16: case DType::f64: return true;
    default: return false;
  }
}
int64_t Const::size() const { return fill ? type.numel() : static_cast<int64_t>(is_float() ? f.size() : i.size()); }
double Const::at_f(int64_t k) const {
  if (fill) return *fill;
  return is_float() ? f.at(k) : static_cast<double>(i.at(k));
}
int64_t Const::at_i(int64_t k) const {
  if (fill) return static_cast<int64_t>(*fill);
  if (!is_float()) return i.at(k);
  double v = f.at(k);
  if (!(v > -9.2e18 && v < 9.2e18)) return v > 0 ? INT64_MAX : INT64_MIN;
  return static_cast<int64_t>(v);
}
std::vector<int64_t> Const::ints() const {
  std::vector<int64_t> out(size());
  for (int64_t k = 0; k < size(); ++k) out[k] = at_i(k);
  return out;
}

ConstPtr make_const(DType dt, std::vector<int64_t> shape, std::vector<int64_t> i, std::vector<double> f) {
  auto c = std::make_shared<Const>();
  c->type.dtype = dt;
  c->type.shape = std::move(shape);
  c->i = std::move(i);
  c->f = std::move(f);
  if (c->is_float() && c->f.empty() && !c->i.empty()) c->f.assign(c->i.begin(), c->i.end()), c->i.clear();
  if (!c->is_float() && c->i.empty() && !c->f.empty()) {
    for (double v : c->f) c->i.push_back(static_cast<int64_t>(v));
    c->f.clear();
  }
  return c;
}

ConstData to_const_data(const Const& c) {
  ConstData d;
  bool uniform = c.size() > 1 && !c.fill;
  for (int64_t k = 1; uniform && k < c.size(); ++k) uniform = c.is_float() ? c.f[k] == c.f[0] : c.i[k] == c.i[0];
  if (c.fill) d.fill = c.fill;
  else if (uniform) d.fill = c.at_f(0);
  else if (c.is_float()) d.f32.assign(c.f.begin(), c.f.end());
  else d.i64 = c.i;
  return d;
}

namespace {
template <typename T>
std::vector<T> raw(const std::string& r, int64_t n) {
  std::vector<T> v(n);
  if (n) std::memcpy(v.data(), r.data(), n * sizeof(T));
  return v;
}
float half_to_float(uint16_t h) {
  uint32_t s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0 ? std::ldexp(static_cast<float>(m), -24)
                   : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(static_cast<float>(m | 1024), static_cast<int>(e) - 25);
  return s ? -v : v;
}
}  // namespace

void read_tensor(const onnx::TensorProto& tp, Tensor& out, bool keep_const) {
  out.type.dtype = dtype_from_onnx(tp.data_type());
  out.type.shape.assign(tp.dims().begin(), tp.dims().end());
  int64_t n = out.type.numel();  // throws on negative / overflow
  if (tp.data_location() == onnx::TensorProto::EXTERNAL) return;  // data elsewhere: shape only
  std::vector<double> f;
  std::vector<int64_t> iv;
  auto bad = [&](std::size_t have) {
    throw Error("tensor '" + tp.name() + "' holds " + std::to_string(have) + " values for shape " + out.type.str());
  };
  const std::string& r = tp.raw_data();
  auto need_raw = [&](std::size_t esz) {
    if (static_cast<uint64_t>(r.size()) != static_cast<uint64_t>(n) * esz) bad(r.size() / (esz ? esz : 1));
  };
  bool have = true;
  switch (out.type.dtype) {
    case DType::f32:
      if (tp.has_raw_data()) { need_raw(4); auto v = raw<float>(r, n); f.assign(v.begin(), v.end()); }
      else f.assign(tp.float_data().begin(), tp.float_data().end());
      break;
    case DType::f64:
      if (tp.has_raw_data()) { need_raw(8); f = raw<double>(r, n); }
      else f.assign(tp.double_data().begin(), tp.double_data().end());
      break;
    case DType::f16:
      if (tp.has_raw_data()) { need_raw(2); for (uint16_t h : raw<uint16_t>(r, n)) f.push_back(half_to_float(h)); }
      else for (int32_t h : tp.int32_data()) f.push_back(half_to_float(static_cast<uint16_t>(h)));
      break;
    case DType::i64:
      if (tp.has_raw_data()) { need_raw(8); iv = raw<int64_t>(r, n); }
      else iv.assign(tp.int64_data().begin(), tp.int64_data().end());
      break;
    case DType::i32:
      if (tp.has_raw_data()) { need_raw(4); auto v = raw<int32_t>(r, n); iv.assign(v.begin(), v.end()); }
      else iv.assign(tp.int32_data().begin(), tp.int32_data().end());
      break;
    case DType::i8: case DType::u8: case DType::boolean: case DType::i16:
      if (tp.has_raw_data()) {
        int64_t esz = dtype_bytes(out.type.dtype);
        need_raw(esz);
        for (int64_t k = 0; k < n; ++k) {
          if (out.type.dtype == DType::i8) iv.push_back(static_cast<int8_t>(r[k]));
          else if (out.type.dtype == DType::i16) { int16_t x; std::memcpy(&x, r.data() + 2 * k, 2); iv.push_back(x); }
          else iv.push_back(static_cast<uint8_t>(r[k]));
        }
      } else iv.assign(tp.int32_data().begin(), tp.int32_data().end());
      break;
    default: have = false;
  }
  if (!have) return;
  std::size_t cnt = f.size() + iv.size();
  if (cnt == 0 && n != 0) return;  // no data (e.g. stripped): shape only
  if (static_cast<int64_t>(cnt) != n) bad(cnt);
  auto c = std::make_shared<Const>();
  c->type = out.type;
  c->f = std::move(f);
  c->i = std::move(iv);
  out.wdata = to_const_data(*c);
  if (keep_const && n <= kFoldLimit) out.k = c;
}

const onnx::AttributeProto* Attrs::find(const std::string& k) const {
  for (const auto& a : n.attribute())
    if (a.name() == k) return &a;
  return nullptr;
}
int64_t Attrs::i(const std::string& k, int64_t d) const {
  auto a = find(k);
  return a ? (a->type() == onnx::AttributeProto::FLOAT ? static_cast<int64_t>(a->f()) : a->i()) : d;
}
double Attrs::f(const std::string& k, double d) const {
  auto a = find(k);
  return a ? (a->type() == onnx::AttributeProto::INT ? static_cast<double>(a->i()) : a->f()) : d;
}
std::string Attrs::s(const std::string& k, const std::string& d) const {
  auto a = find(k);
  return a ? a->s() : d;
}
std::vector<int64_t> Attrs::ints(const std::string& k) const {
  auto a = find(k);
  if (!a) return {};
  return {a->ints().begin(), a->ints().end()};
}
std::vector<double> Attrs::floats(const std::string& k) const {
  auto a = find(k);
  if (!a) return {};
  return {a->floats().begin(), a->floats().end()};
}

}  // namespace fuseplan::detail
