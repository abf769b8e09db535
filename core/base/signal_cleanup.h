#pragma once
// What SIGINT, SIGTERM and SIGHUP do to a program that writes files: nothing
// half-written stays behind.
//
// Every temporary a program is writing (AtomicFile's `<name>.tmp-<pid>`, a
// run folder's lock, a folder it made) is registered here while it exists.
// A signal then either
//  - removes them all and ends the process by the same signal (the default:
//    a conversion, a load, anything without step boundaries), or,
//  - while stop_at_step_boundaries(true), only records the signal, so a run
//    loop can stop at its next step and close its files whole; a second
//    signal removes the temporaries and ends the process at once.
// SIGXFSZ (a file-size limit) is ignored, so that a write past it fails as a
// full disk does, with an error, instead of killing the process.
#include <string>

namespace h2o {

// Installs the handlers (once, at program start; the desktop app does not).
void install_signal_cleanup();
// true: the first signal is only recorded (see above); false: back to the default.
void stop_at_step_boundaries(bool on);
// The signal recorded (0: none).
int stop_signal();

// Registers `path` for removal by a fatal signal: a file (unlinked) or a
// folder (removed if empty, after every file). Returns a ticket for
// unregister_temporary; -1 when the table is full (the path is then not
// cleaned by a signal, nothing else changes).
int register_temporary(const std::string& path, bool folder = false);
void unregister_temporary(int ticket);

}  // namespace h2o
