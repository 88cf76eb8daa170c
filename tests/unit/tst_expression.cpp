// Integer expressions as written in task manifests: parsing, evaluation and error reporting.
#include <QtTest>

#include <limits>

#include "core/task/expression.h"

using kwb::Expression;
using kwb::ExpressionError;

namespace {

const std::map<std::string, std::int64_t> kValues = {
    {"rows", 1024}, {"cols", 300}, {"M", 7}, {"N", 3}, {"zero", 0}, {"big", std::int64_t{1} << 62},
    {"BLOCK", 256}, {"min_val", -5}};

}  // namespace

class TestExpression : public QObject {
  Q_OBJECT

 private slots:
  void evaluates_data();
  void evaluates();
  void evaluationErrors_data();
  void evaluationErrors();
  void syntaxErrors_data();
  void syntaxErrors();
  void identifiers_data();
  void identifiers();
  void constantAndEmpty();
};

void TestExpression::evaluates_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<qint64>("expected");

  QTest::newRow("number") << "42" << qint64(42);
  QTest::newRow("name") << "rows" << qint64(1024);
  QTest::newRow("spaces") << "  rows   *  2 " << qint64(2048);
  QTest::newRow("mul before add") << "1 + 2 * 3" << qint64(7);
  QTest::newRow("mul before sub") << "10 - 2 * 3" << qint64(4);
  QTest::newRow("left assoc sub") << "10 - 3 - 2" << qint64(5);
  QTest::newRow("left assoc div") << "100 / 10 / 5" << qint64(2);
  QTest::newRow("div and mul same level") << "7 / 2 * 2" << qint64(6);
  QTest::newRow("mod") << "cols % 7" << qint64(300 % 7);
  QTest::newRow("mod same level as mul") << "2 * 7 % 4" << qint64(2);
  QTest::newRow("parentheses") << "(1 + 2) * 3" << qint64(9);
  QTest::newRow("nested parentheses") << "((M + N) * (M - N))" << qint64(40);
  QTest::newRow("division truncates") << "7 / 2" << qint64(3);
  QTest::newRow("division truncates toward zero") << "-7 / 2" << qint64(-3);
  QTest::newRow("unary minus") << "-M" << qint64(-7);
  QTest::newRow("unary minus binds tighter than mul") << "-M * N" << qint64(-21);
  QTest::newRow("double unary minus") << "--M" << qint64(7);
  QTest::newRow("minus of parenthesis") << "-(M - N)" << qint64(-4);
  QTest::newRow("subtract negative") << "M - -N" << qint64(10);
  QTest::newRow("ceil_div exact") << "ceil_div(rows, 256)" << qint64(4);
  QTest::newRow("ceil_div rounds up") << "ceil_div(cols, 256)" << qint64(2);
  QTest::newRow("ceil_div negative") << "ceil_div(-7, 2)" << qint64(-3);
  QTest::newRow("ceil_div both negative") << "ceil_div(-7, -2)" << qint64(4);
  QTest::newRow("min") << "min(rows, cols)" << qint64(300);
  QTest::newRow("max") << "max(rows, cols)" << qint64(1024);
  QTest::newRow("nested functions") << "max(1, ceil_div(min(rows, cols), BLOCK))" << qint64(2);
  QTest::newRow("function in arithmetic") << "2 * min(M, N) + 1" << qint64(7);
  QTest::newRow("name that looks like a function") << "min_val * 2" << qint64(-10);
  QTest::newRow("sgemm flops") << "2 * M * N * 4" << qint64(168);
  QTest::newRow("large but fits") << "big + (big - 1)" << qint64(std::numeric_limits<std::int64_t>::max());
  QTest::newRow("int64 max literal") << "9223372036854775807" << qint64(std::numeric_limits<std::int64_t>::max());
  QTest::newRow("int64 min via subtraction") << "-9223372036854775807 - 1"
                                             << qint64(std::numeric_limits<std::int64_t>::min());
  // At the limits: 1024 characters, 64 nested parentheses or calls.
  QTest::newRow("1024 characters") << "1" + QString("+1").repeated(511) + " " << qint64(512);
  QTest::newRow("64 nested parentheses")
      << QString("(").repeated(64) + "M" + QString(")").repeated(64) << qint64(7);
  QTest::newRow("64 nested calls") << QString("max(1, ").repeated(64) + "M" + QString(")").repeated(64)
                                   << qint64(7);
  QTest::newRow("1000 unary minuses") << QString("-").repeated(1000) + "M" << qint64(7);
}

void TestExpression::evaluates() {
  QFETCH(QString, text);
  QFETCH(qint64, expected);
  const Expression e = Expression::parse(text.toStdString());
  QCOMPARE(QString::fromStdString(e.text()), text);
  QVERIFY(!e.empty());
  QCOMPARE(qint64(e.evaluate(kValues)), expected);
}

void TestExpression::evaluationErrors_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<QString>("message");
  QTest::addColumn<int>("column");

  QTest::newRow("unknown name") << "rows * cols2"
                                << "unknown name 'cols2' at character 8 of the expression" << 7;
  QTest::newRow("division by zero") << "M / zero"
                                    << "division by zero at character 3 of the expression" << 2;
  QTest::newRow("division by zero literal") << "rows / (M - 7)"
                                            << "division by zero at character 6 of the expression" << 5;
  QTest::newRow("modulo by zero") << "M % 0"
                                  << "division by zero at character 3 of the expression" << 2;
  QTest::newRow("ceil_div by zero") << "1 + ceil_div(M, zero)"
                                    << "division by zero at character 5 of the expression" << 4;
  QTest::newRow("mul overflow") << "big * 2"
                                << "64-bit integer overflow at character 5 of the expression" << 4;
  QTest::newRow("add overflow") << "big + big"
                                << "64-bit integer overflow at character 5 of the expression" << 4;
  QTest::newRow("sub overflow") << "-big - big - big"
                                << "64-bit integer overflow at character 12 of the expression" << 11;
  QTest::newRow("negate overflow") << "-(-9223372036854775807 - 1)"
                                   << "64-bit integer overflow at character 1 of the expression" << 0;
  QTest::newRow("divide overflow") << "(-9223372036854775807 - 1) / -1"
                                   << "64-bit integer overflow at character 28 of the expression" << 27;
  QTest::newRow("overflow inside function")
      << "max(1, big * 4)"
      << "64-bit integer overflow at character 12 of the expression" << 11;
}

void TestExpression::evaluationErrors() {
  QFETCH(QString, text);
  QFETCH(QString, message);
  QFETCH(int, column);
  const Expression e = Expression::parse(text.toStdString());
  try {
    e.evaluate(kValues);
    QFAIL("no error");
  } catch (const ExpressionError &err) {
    QCOMPARE(QString::fromStdString(err.what()), message);
    QCOMPARE(int(err.column()), column);
  }
}

void TestExpression::syntaxErrors_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<QString>("message");
  QTest::addColumn<int>("column");

  const QString operand = "expected a number, a name, '(' or '-'";
  QTest::newRow("empty") << "" << "empty expression; " + operand << 0;
  QTest::newRow("blank") << "   " << "empty expression; " + operand << 0;
  QTest::newRow("trailing operator") << "rows *"
                                     << "unexpected end of expression at character 7 of the expression; " +
                                            operand
                                     << 6;
  QTest::newRow("double operator") << "rows * * 2"
                                   << "unexpected '*' at character 8 of the expression; " + operand << 7;
  QTest::newRow("leading operator") << "* 2"
                                    << "unexpected '*' at character 1 of the expression; " + operand << 0;
  QTest::newRow("unary plus is not allowed")
      << "+2"
      << "unexpected '+' at character 1 of the expression; " + operand << 0;
  QTest::newRow("missing operator")
      << "2 rows"
      << "unexpected 'rows' at character 3 of the expression; expected an operator (+ - * / %) or the end of "
         "the expression"
      << 2;
  QTest::newRow("number glued to name")
      << "2M"
      << "unexpected 'M' at character 2 of the expression; expected an operator (+ - * / %) or the end "
         "of the expression"
      << 1;
  QTest::newRow("stray close") << "rows)"
                               << "unexpected ')' at character 5 of the expression; expected an operator (+ "
                                  "- * / %) or the end of the "
                                  "expression"
                               << 4;
  QTest::newRow("unclosed parenthesis")
      << "(rows + 1"
      << "missing ')' to close the '(' at character 1 of the expression" << 9;
  QTest::newRow("bad token in parenthesis")
      << "(rows 1)"
      << "unexpected '1' at character 7 of the expression; expected an operator or ')'" << 6;
  QTest::newRow("empty parentheses") << "()"
                                     << "unexpected ')' at character 2 of the expression; " + operand << 1;
  QTest::newRow("bad character")
      << "rows ^ 2"
      << "unexpected character '^' at character 6 of the expression; expected numbers, names, + - * / %, "
         "parentheses and ceil_div, min, max"
      << 5;
  QTest::newRow("float literal")
      << "1.5"
      << "unexpected character '.' at character 2 of the expression; expected numbers, names, + - * / %, "
         "parentheses and ceil_div, min, max"
      << 1;
  QTest::newRow("unknown function")
      << "floor(rows, 2)"
      << "unknown function 'floor' at character 1 of the expression; expected ceil_div, min or max" << 0;
  QTest::newRow("too few arguments") << "ceil_div(rows)"
                                     << "ceil_div at character 1 of the expression takes 2 arguments, not 1"
                                     << 0;
  QTest::newRow("too many arguments") << "2 * max(1, 2, 3)"
                                      << "max at character 5 of the expression takes 2 arguments, not 3" << 4;
  QTest::newRow("no arguments") << "min()"
                                << "min at character 1 of the expression takes 2 arguments, not 0" << 0;
  QTest::newRow("unclosed call") << "min(rows, 2"
                                 << "missing ')' to close min( at character 1 of the expression" << 11;
  QTest::newRow("bad separator")
      << "min(rows; 2)"
      << "unexpected character ';' at character 9 of the expression; expected numbers, names, + - * / %, "
         "parentheses and ceil_div, min, max"
      << 8;
  QTest::newRow("missing comma") << "min(rows 2)"
                                 << "unexpected '2' at character 10 of the expression; expected ',' or ')'"
                                 << 9;
  QTest::newRow("empty argument") << "min(, 2)"
                                  << "unexpected ',' at character 5 of the expression; " + operand << 4;
  // Limits that keep parsing, evaluation and destruction from exhausting the stack.
  const QString limitsTail = "; expected at most 64 levels of parentheses and function calls";
  QTest::newRow("1025 characters") << "1" + QString("+1").repeated(512)
                                   << "expression is 1025 characters long; expected at most 1024" << 1024;
  QTest::newRow("300000-term sum") << "1" + QString(" + 1").repeated(299999)
                                   << "expression is 1199997 characters long; expected at most 1024" << 1024;
  QTest::newRow("200000 nested parentheses")
      << QString("(").repeated(200000) + "1" + QString(")").repeated(200000)
      << "expression is 400001 characters long; expected at most 1024" << 1024;
  QTest::newRow("65 nested parentheses")
      << QString("(").repeated(65) + "1" + QString(")").repeated(65)
      << "more than 64 nested parentheses at character 65 of the expression" + limitsTail << 64;
  QTest::newRow("65 nested calls") << QString("min(1, ").repeated(65) + "1" + QString(")").repeated(65)
                                   << "more than 64 nested parentheses at character 449 of the expression" +
                                          limitsTail
                                   << 448;
  QTest::newRow("calls and parentheses together")
      << "2 * " + QString("ceil_div((").repeated(32) + "(rows)" + QString("), 2)").repeated(32)
      << "more than 64 nested parentheses at character 325 of the expression" + limitsTail << 324;
  QTest::newRow("literal too large")
      << "9223372036854775808"
      << "number 9223372036854775808 at character 1 of the expression does not fit in 64 bits; expected at "
         "most 9223372036854775807"
      << 0;
}

void TestExpression::syntaxErrors() {
  QFETCH(QString, text);
  QFETCH(QString, message);
  QFETCH(int, column);
  try {
    Expression::parse(text.toStdString());
    QFAIL("no error");
  } catch (const ExpressionError &err) {
    QCOMPARE(QString::fromStdString(err.what()), message);
    QCOMPARE(int(err.column()), column);
  }
}

void TestExpression::identifiers_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<QStringList>("expected");

  QTest::newRow("none") << "2 * 3" << QStringList{};
  QTest::newRow("one") << "rows" << QStringList{"rows"};
  QTest::newRow("first-use order") << "cols * rows + cols" << QStringList{"cols", "rows"};
  QTest::newRow("function names are not identifiers")
      << "ceil_div(N, TILE) * min(M, TILE)" << QStringList{"N", "TILE", "M"};
  QTest::newRow("sgemm bytes") << "4 * (M * K + K * N + M * N)" << QStringList{"M", "K", "N"};
  QTest::newRow("unary minus") << "-x - -y" << QStringList{"x", "y"};
}

void TestExpression::identifiers() {
  QFETCH(QString, text);
  QFETCH(QStringList, expected);
  QStringList actual;
  for (const auto &id : Expression::parse(text.toStdString()).identifiers()) actual << QString::fromStdString(id);
  QCOMPARE(actual, expected);
}

void TestExpression::constantAndEmpty() {
  const Expression empty;
  QVERIFY(empty.empty());
  QCOMPARE(empty.evaluate({}), std::int64_t{0});
  QVERIFY(empty.identifiers().empty());

  const Expression c = Expression::constant(-17);
  QVERIFY(!c.empty());
  QCOMPARE(c.text(), std::string("-17"));
  QCOMPARE(c.evaluate({}), std::int64_t{-17});
  QVERIFY(c.identifiers().empty());

  // Copies share the parsed tree and evaluate independently of the values' lifetime.
  Expression copy;
  {
    const Expression original = Expression::parse("ceil_div(rows, BLOCK)");
    copy = original;
  }
  QCOMPARE(copy.evaluate(kValues), std::int64_t{4});
  QCOMPARE(copy.evaluate({{"rows", 10}, {"BLOCK", 3}}), std::int64_t{4});
}

QTEST_APPLESS_MAIN(TestExpression)
#include "tst_expression.moc"
