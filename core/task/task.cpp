#include "core/task/task.h"

#include <array>
#include <utility>

namespace kwb {

namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  std::size_t size;
  bool floating;
};

constexpr std::array<DTypeInfo, 9> kDTypes = {{
    {DType::F64, "f64", 8, true},
    {DType::F32, "f32", 4, true},
    {DType::F16, "f16", 2, true},
    {DType::BF16, "bf16", 2, true},
    {DType::I64, "i64", 8, false},
    {DType::I32, "i32", 4, false},
    {DType::I8, "i8", 1, false},
    {DType::U8, "u8", 1, false},
    {DType::Bool, "bool", 1, false},
}};

const DTypeInfo &info(DType t) {
  for (const auto &i : kDTypes)
    if (i.type == t) return i;
  return kDTypes[1];
}

}  // namespace

std::string_view dtypeName(DType t) { return info(t).name; }

std::optional<DType> dtypeFromName(std::string_view name) {
  for (const auto &i : kDTypes)
    if (i.name == name) return i.type;
  return std::nullopt;
}

std::size_t dtypeSize(DType t) { return info(t).size; }

bool dtypeIsFloating(DType t) { return info(t).floating; }

std::string_view roleName(TensorRole role) {
  switch (role) {
    case TensorRole::In:
      return "in";
    case TensorRole::Out:
      return "out";
    case TensorRole::InOut:
      return "inout";
  }
  return "in";
}

std::optional<TensorRole> roleFromName(std::string_view name) {
  for (TensorRole r : {TensorRole::In, TensorRole::Out, TensorRole::InOut})
    if (roleName(r) == name) return r;
  return std::nullopt;
}

std::string_view generatorKindName(Generator::Kind kind) {
  switch (kind) {
    case Generator::Kind::Uniform:
      return "uniform";
    case Generator::Kind::Normal:
      return "normal";
    case Generator::Kind::RandInt:
      return "randint";
    case Generator::Kind::Arange:
      return "arange";
    case Generator::Kind::Constant:
      return "constant";
  }
  return "uniform";
}

std::optional<Generator::Kind> generatorKindFromName(std::string_view name) {
  using K = Generator::Kind;
  for (K k : {K::Uniform, K::Normal, K::RandInt, K::Arange, K::Constant})
    if (generatorKindName(k) == name) return k;
  return std::nullopt;
}

const Tensor *Task::tensor(std::string_view wanted) const {
  for (const auto &t : tensors)
    if (t.name == wanted) return &t;
  return nullptr;
}

const SizeConfig *Task::config(std::string_view wanted) const {
  for (const auto &c : configs)
    if (c.name == wanted) return &c;
  return nullptr;
}

std::filesystem::path Task::starterSource() const {
  if (starter && !starter->empty()) return *starter;
  return reference.source;
}

}  // namespace kwb
