#pragma once
// For the UI tests: a part of the main window (a view, a service) found as the window's child of
// its type, as a user's click finds the widget on screen; the window keeps no getter for tests.
// Fails the test program when the window has none (a part that was renamed or removed).
#include <QObject>
#include <QtGlobal>

template <typename T>
T *partOf(const QObject &window) {
  T *part = window.findChild<T *>();
  if (!part) qFatal("the window has no %s", T::staticMetaObject.className());
  return part;
}

// Waits until the window's background work has drained; on a timeout the test fails saying what
// was still pending ("export", "workspace").
#define QVERIFY_SETTLED(window)                                                                           \
  QVERIFY2(waitFor(&(window), &kwb::ui::MainWindow::settled, (window).isSettled()),                       \
           qPrintable(QStringLiteral("still pending: ") + (window).pendingWork().join(QStringLiteral(", "))))
