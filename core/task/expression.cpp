#include "core/task/expression.h"

#include <cctype>
#include <limits>

namespace kwb {

struct Expression::Node {
  enum class Kind { Number, Name, Negate, Add, Subtract, Multiply, Divide, Modulo, CeilDiv, Min, Max };
  Kind kind = Kind::Number;
  std::int64_t value = 0;  // Number
  std::string name;        // Name
  std::size_t column = 0;  // where the node's token starts (operator, function name, literal)
  std::shared_ptr<const Node> lhs;
  std::shared_ptr<const Node> rhs;
};

namespace {

using Node = Expression::Node;
using NodePtr = std::shared_ptr<const Node>;

std::string at(std::size_t column) {
  return " at character " + std::to_string(column + 1) + " of the expression";
}

const char *const kOperandExpected = "expected a number, a name, '(' or '-'";

struct Token {
  enum class Kind { End, Number, Name, Symbol };
  Kind kind = Kind::End;
  std::string text;
  std::size_t column = 0;
};

bool isNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Parser {
 public:
  explicit Parser(const std::string &text) : text_(text) {
    // Bounds the parser's recursion and the tree's depth (evaluation and destruction recurse).
    if (text_.size() > kMaxExpressionLength)
      throw ExpressionError("expression is " + std::to_string(text_.size()) +
                                " characters long; expected at most " + std::to_string(kMaxExpressionLength),
                            kMaxExpressionLength);
    advance();
  }

  NodePtr parseAll() {
    if (current_.kind == Token::Kind::End)
      throw ExpressionError(std::string("empty expression; ") + kOperandExpected, 0);
    NodePtr root = parseSum();
    if (current_.kind != Token::Kind::End)
      throw ExpressionError("unexpected " + describe(current_) + at(current_.column) +
                                "; expected an operator (+ - * / %) or the end of the expression",
                            current_.column);
    return root;
  }

 private:
  static std::string describe(const Token &t) {
    if (t.kind == Token::Kind::End) return "end of expression";
    return "'" + t.text + "'";
  }

  void advance() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    current_ = Token{};
    current_.column = pos_;
    if (pos_ >= text_.size()) return;
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t end = pos_;
      while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
      current_.kind = Token::Kind::Number;
      current_.text = text_.substr(pos_, end - pos_);
      pos_ = end;
      return;
    }
    if (isNameStart(c)) {
      std::size_t end = pos_;
      while (end < text_.size() && isNameChar(text_[end])) ++end;
      current_.kind = Token::Kind::Name;
      current_.text = text_.substr(pos_, end - pos_);
      pos_ = end;
      return;
    }
    static const std::string symbols = "+-*/%(),";
    if (symbols.find(c) != std::string::npos) {
      current_.kind = Token::Kind::Symbol;
      current_.text = std::string(1, c);
      ++pos_;
      return;
    }
    throw ExpressionError("unexpected character '" + std::string(1, c) + "'" + at(pos_) +
                              "; expected numbers, names, + - * / %, parentheses and "
                              "ceil_div, min, max",
                          pos_);
  }

  bool isSymbol(char c) const {
    return current_.kind == Token::Kind::Symbol && current_.text[0] == c;
  }

  static NodePtr binary(Node::Kind kind, std::size_t column, NodePtr lhs, NodePtr rhs) {
    auto n = std::make_shared<Node>();
    n->kind = kind;
    n->column = column;
    n->lhs = std::move(lhs);
    n->rhs = std::move(rhs);
    return n;
  }

  NodePtr parseSum() {
    NodePtr lhs = parseProduct();
    while (isSymbol('+') || isSymbol('-')) {
      const Node::Kind kind = isSymbol('+') ? Node::Kind::Add : Node::Kind::Subtract;
      const std::size_t column = current_.column;
      advance();
      lhs = binary(kind, column, lhs, parseProduct());
    }
    return lhs;
  }

  NodePtr parseProduct() {
    NodePtr lhs = parseUnary();
    while (isSymbol('*') || isSymbol('/') || isSymbol('%')) {
      const Node::Kind kind = isSymbol('*')   ? Node::Kind::Multiply
                              : isSymbol('/') ? Node::Kind::Divide
                                              : Node::Kind::Modulo;
      const std::size_t column = current_.column;
      advance();
      lhs = binary(kind, column, lhs, parseUnary());
    }
    return lhs;
  }

  NodePtr parseUnary() {
    if (isSymbol('-')) {
      const std::size_t column = current_.column;
      advance();
      auto n = std::make_shared<Node>();
      n->kind = Node::Kind::Negate;
      n->column = column;
      n->lhs = parseUnary();
      return n;
    }
    return parsePrimary();
  }

  NodePtr parsePrimary() {
    const Token token = current_;
    switch (token.kind) {
      case Token::Kind::Number: {
        std::int64_t value = 0;
        for (char d : token.text) {
          if (__builtin_mul_overflow(value, std::int64_t{10}, &value) ||
              __builtin_add_overflow(value, std::int64_t{d - '0'}, &value))
            throw ExpressionError("number " + token.text + at(token.column) +
                                      " does not fit in 64 bits; expected at most " +
                                      std::to_string(std::numeric_limits<std::int64_t>::max()),
                                  token.column);
        }
        advance();
        auto n = std::make_shared<Node>();
        n->kind = Node::Kind::Number;
        n->value = value;
        n->column = token.column;
        return n;
      }
      case Token::Kind::Name: {
        advance();
        if (isSymbol('(')) return parseCall(token);
        auto n = std::make_shared<Node>();
        n->kind = Node::Kind::Name;
        n->name = token.text;
        n->column = token.column;
        return n;
      }
      case Token::Kind::Symbol:
        if (token.text == "(") {
          enter(token.column);
          advance();
          NodePtr inner = parseSum();
          if (!isSymbol(')')) {
            if (current_.kind == Token::Kind::End)
              throw ExpressionError("missing ')' to close the '('" + at(token.column), current_.column);
            throw ExpressionError("unexpected " + describe(current_) + at(current_.column) +
                                      "; expected an operator or ')'",
                                  current_.column);
          }
          advance();
          --depth_;
          return inner;
        }
        break;
      case Token::Kind::End:
        break;
    }
    throw ExpressionError("unexpected " + describe(token) + at(token.column) + "; " + kOperandExpected,
                          token.column);
  }

  NodePtr parseCall(const Token &name) {
    Node::Kind kind;
    if (name.text == "ceil_div")
      kind = Node::Kind::CeilDiv;
    else if (name.text == "min")
      kind = Node::Kind::Min;
    else if (name.text == "max")
      kind = Node::Kind::Max;
    else
      throw ExpressionError("unknown function '" + name.text + "'" + at(name.column) +
                                "; expected ceil_div, min or max",
                            name.column);
    enter(name.column);
    advance();  // '('
    std::vector<NodePtr> args;
    if (!isSymbol(')')) {
      for (;;) {
        args.push_back(parseSum());
        if (isSymbol(',')) {
          advance();
          continue;
        }
        if (isSymbol(')')) break;
        if (current_.kind == Token::Kind::End)
          throw ExpressionError("missing ')' to close " + name.text + "(" + at(name.column),
                                current_.column);
        throw ExpressionError("unexpected " + describe(current_) + at(current_.column) +
                                  "; expected ',' or ')'",
                              current_.column);
      }
    }
    advance();  // ')'
    --depth_;
    if (args.size() != 2)
      throw ExpressionError(name.text + at(name.column) + " takes 2 arguments, not " +
                                std::to_string(args.size()),
                            name.column);
    return binary(kind, name.column, args[0], args[1]);
  }

  // One more level of parentheses (a group or a call) opened at `column`.
  void enter(std::size_t column) {
    if (++depth_ > kMaxExpressionDepth)
      throw ExpressionError("more than " + std::to_string(kMaxExpressionDepth) + " nested parentheses" +
                                at(column) + "; expected at most " + std::to_string(kMaxExpressionDepth) +
                                " levels of parentheses and function calls",
                            column);
  }

  const std::string &text_;
  std::size_t depth_ = 0;
  std::size_t pos_ = 0;
  Token current_;
};

[[noreturn]] void overflow(const Node &n) {
  throw ExpressionError("64-bit integer overflow" + at(n.column), n.column);
}

std::int64_t eval(const Node &n, const std::map<std::string, std::int64_t> &values) {
  using K = Node::Kind;
  switch (n.kind) {
    case K::Number:
      return n.value;
    case K::Name: {
      auto it = values.find(n.name);
      if (it == values.end())
        throw ExpressionError("unknown name '" + n.name + "'" + at(n.column), n.column);
      return it->second;
    }
    case K::Negate: {
      const std::int64_t v = eval(*n.lhs, values);
      std::int64_t r = 0;
      if (__builtin_sub_overflow(std::int64_t{0}, v, &r)) overflow(n);
      return r;
    }
    default:
      break;
  }
  const std::int64_t a = eval(*n.lhs, values);
  const std::int64_t b = eval(*n.rhs, values);
  std::int64_t r = 0;
  switch (n.kind) {
    case K::Add:
      if (__builtin_add_overflow(a, b, &r)) overflow(n);
      return r;
    case K::Subtract:
      if (__builtin_sub_overflow(a, b, &r)) overflow(n);
      return r;
    case K::Multiply:
      if (__builtin_mul_overflow(a, b, &r)) overflow(n);
      return r;
    case K::Divide:
    case K::Modulo:
    case K::CeilDiv: {
      if (b == 0) throw ExpressionError("division by zero" + at(n.column), n.column);
      if (a == std::numeric_limits<std::int64_t>::min() && b == -1) overflow(n);
      if (n.kind == K::Divide) return a / b;
      if (n.kind == K::Modulo) return a % b;
      std::int64_t q = a / b;
      if (a % b != 0 && ((a < 0) == (b < 0))) ++q;  // round toward +infinity
      return q;
    }
    case K::Min:
      return a < b ? a : b;
    case K::Max:
      return a > b ? a : b;
    default:
      break;
  }
  return 0;
}

void collect(const Node &n, std::vector<std::string> &out) {
  if (n.kind == Node::Kind::Name) {
    for (const auto &s : out)
      if (s == n.name) return;
    out.push_back(n.name);
    return;
  }
  if (n.lhs) collect(*n.lhs, out);
  if (n.rhs) collect(*n.rhs, out);
}

}  // namespace

Expression Expression::parse(const std::string &text) {
  Parser parser(text);
  Expression e;
  e.root_ = parser.parseAll();
  e.text_ = text;
  return e;
}

Expression Expression::constant(std::int64_t value) {
  auto n = std::make_shared<Node>();
  n->kind = Node::Kind::Number;
  n->value = value;
  Expression e;
  e.root_ = std::move(n);
  e.text_ = std::to_string(value);
  return e;
}

std::vector<std::string> Expression::identifiers() const {
  std::vector<std::string> out;
  if (root_) collect(*root_, out);
  return out;
}

std::int64_t Expression::evaluate(const std::map<std::string, std::int64_t> &values) const {
  if (!root_) return 0;
  return eval(*root_, values);
}

}  // namespace kwb
