#pragma once
// One list of fields per payload struct, read by both directions of its JSON form: the
// to_json/from_json pair beside each struct names every key once, so a field cannot be written
// under one key and read under another.
//
//   constexpr auto kLaunchFields = std::tuple{field("grid", &LaunchDims::grid), ...};
//   void to_json(json &j, const LaunchDims &v) { writeFields(j, v, kLaunchFields); }
//   void from_json(const json &j, LaunchDims &v) { readFields(j, v, kLaunchFields); }
//
// Reading is lenient where payloads evolve: a missing key or a null value leaves the member at
// its default (a payload written by an older version reads back), while a value of the wrong type
// throws nlohmann::json::type_error naming the key. An empty std::optional is written as null,
// or left out for fields made with omitEmpty().
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

namespace kwb::json_fields {

template <typename T, typename M>
struct Field {
  const char *key;
  M T::*member;
  bool omitWhenEmpty = false;  // an empty optional (or empty container) is left out
};

template <typename T, typename M>
constexpr Field<T, M> field(const char *key, M T::*member) {
  return {key, member, false};
}

template <typename T, typename M>
constexpr Field<T, M> omitEmpty(const char *key, M T::*member) {
  return {key, member, true};
}

namespace detail {

// nlohmann converts any number (and true/false) to any arithmetic type (-1 to 2^64-1, 2.5 to 2):
// a count or an index must be an integer, a non-negative one for an unsigned member, and a
// floating-point member a number.
template <typename M>
void checkNumber(const nlohmann::json &value) {
  if constexpr (std::is_integral_v<M> && !std::is_same_v<M, bool>) {
    if (!value.is_number_integer())
      throw nlohmann::json::type_error::create(302, std::string("type must be an integer, but is ") +
                                                        (value.is_number() ? "a fraction" : value.type_name()),
                                               &value);
    if constexpr (std::is_unsigned_v<M>)
      if (!value.is_number_unsigned() && value.template get<std::int64_t>() < 0)
        throw nlohmann::json::type_error::create(302, "must be a non-negative integer", &value);
  } else if constexpr (std::is_floating_point_v<M>) {
    if (!value.is_number())
      throw nlohmann::json::type_error::create(302, std::string("type must be number, but is ") + value.type_name(),
                                               &value);
  } else if constexpr (requires { typename M::value_type; } && !std::is_same_v<M, std::string>) {
    if (value.is_array())
      for (const auto &element : value) checkNumber<typename M::value_type>(element);
  }
}

}  // namespace detail

template <typename M>
void read(const nlohmann::json &object, const char *key, M &member) {
  if (!object.is_object()) return;
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return;
  try {
    detail::checkNumber<M>(*it);
    it->get_to(member);
  } catch (const nlohmann::json::exception &e) {
    throw nlohmann::json::type_error::create(302, std::string("field '") + key + "': " + e.what(), &object);
  }
}

// Absent or null leaves an optional empty.
template <typename M>
void read(const nlohmann::json &object, const char *key, std::optional<M> &member) {
  member.reset();
  if (!object.is_object()) return;
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return;
  M value{};
  read(object, key, value);
  member = std::move(value);
}

namespace detail {

template <typename M>
bool isEmpty(const M &value) {
  if constexpr (requires { value.empty(); }) return value.empty();
  else return false;
}
template <typename M>
bool isEmpty(const std::optional<M> &value) {
  return !value.has_value();
}

template <typename M>
nlohmann::json toJson(const M &value) {
  return nlohmann::json(value);
}
template <typename M>
nlohmann::json toJson(const std::optional<M> &value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace detail

template <typename T, typename... Fs>
void writeFields(nlohmann::json &j, const T &value, const std::tuple<Fs...> &fields) {
  if (!j.is_object()) j = nlohmann::json::object();
  std::apply(
      [&](const auto &...f) {
        ((f.omitWhenEmpty && detail::isEmpty(value.*(f.member)) ? void()
                                                                : void(j[f.key] = detail::toJson(value.*(f.member)))),
         ...);
      },
      fields);
}

template <typename T, typename... Fs>
void readFields(const nlohmann::json &j, T &value, const std::tuple<Fs...> &fields) {
  std::apply([&](const auto &...f) { (read(j, f.key, value.*(f.member)), ...); }, fields);
}

}  // namespace kwb::json_fields
