#pragma once
// Integer expressions over named values, as written in manifests: shapes ("rows * cols"),
// launch dimensions ("ceil_div(rows, BLOCK)") and cost formulas ("2 * M * N * K").
// Grammar: + - * / % with the usual precedence, unary minus, parentheses, decimal integers,
// identifiers, and the functions ceil_div(a, b), min(a, b), max(a, b). Division truncates.
// An expression is at most kMaxExpressionLength characters, with at most kMaxExpressionDepth
// nested parentheses and function calls.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace kwb {

inline constexpr std::size_t kMaxExpressionLength = 1024;
inline constexpr std::size_t kMaxExpressionDepth = 64;

class ExpressionError : public std::runtime_error {
 public:
  ExpressionError(std::string message, std::size_t column)
      : std::runtime_error(std::move(message)), column_(column) {}
  // 0-based offset into the expression's text (messages say "at character column() + 1").
  std::size_t column() const { return column_; }

 private:
  std::size_t column_;
};

class Expression {
 public:
  Expression() = default;  // empty: evaluates to 0
  // Throws ExpressionError on a syntax error or when the text exceeds the limits above.
  static Expression parse(const std::string &text);
  static Expression constant(std::int64_t value);

  const std::string &text() const { return text_; }
  bool empty() const { return !root_; }
  // Identifiers used, in first-use order, without repeats.
  std::vector<std::string> identifiers() const;
  // Throws ExpressionError on an unknown name, division by zero or 64-bit overflow.
  std::int64_t evaluate(const std::map<std::string, std::int64_t> &values) const;

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

}  // namespace kwb
