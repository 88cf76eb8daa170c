#pragma once
// For the window's tests: wait for a signal unless what it announces has already happened (no
// sleeps: the event loop runs until the signal or the timeout).
#include <QSignalSpy>

template <typename Object, typename Signal>
bool waitFor(Object *object, Signal signal, bool alreadyDone, int timeoutMs = 60000) {
  if (alreadyDone) return true;
  QSignalSpy spy(object, signal);
  return spy.wait(timeoutMs);
}
