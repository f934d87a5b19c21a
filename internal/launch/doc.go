// Package launch starts the gateway as a daemon and tells its launcher when it
// is ready.
//
// It sits at the very start of the sandbox path (contract part A): the SDK runs
// `mcp-gateway --config '<json>'`, and the command line calls [Start] as soon
// as its flags are parsed, checks the config while the serving process starts
// up, and then calls [Pending.Complete] (or [Pending.Abort] if the config is
// invalid). [Launch] does both in one call. Together they
//
//  1. start the serving process in a new session (its own process group),
//     with the launcher's stderr, stdout discarded, and the write end of a
//     readiness pipe as fd [ReadyFD]; it waits for its handoff on stdin;
//  2. take the launch lock (<PIDFile>.lock) so two launches cannot both
//     proceed, and refuse with [AlreadyRunningError] if the pid file names a
//     live mcp-gateway ([Running]);
//  3. create the log file if it is missing and hand over, on the serving
//     process's stdin, the log file's path and the handoff (config and
//     token): from then on its stdout and stderr are appended to the log;
//  4. write the token file ([WriteTokenFile]: directory 0700, file 0600, no
//     trailing newline, atomic) and the pid file while the servers start;
//  5. wait for the serving process to report on the pipe, for it to exit,
//     for the timeout, or for the context;
//  6. on `ready`, with both files written, release the process (it outlives
//     the launcher) and return its pid and port; on anything else signal
//     every process of its session (SIGTERM, then SIGKILL after a grace
//     period), remove the token and pid files and return a [*StartError]
//     holding the reason and the tail of the log, where the failing
//     server's stderr is. A serving process that exited is reaped only
//     after that, so its pid, the session's id, cannot have been given to
//     another process while the session is signalled; the other processes of
//     the session are signalled through a pidfd, once checked to still be
//     in it.
//
// Before step 3 nothing but the lock file is written and the serving process
// has started nothing, so an aborted or refused launch only kills it.
//
// The serving process (`mcp-gateway serve --ready-fd=3 ...`) holds the other
// end: [OpenNotifier] opens the pipe, [AcceptHandoff] reads its stdin and
// sends its output to the log, and [Notifier.Ready] or [Notifier.Fail] sends
// the one report.
//
// # Readiness protocol
//
// The serving process writes exactly one report and closes the pipe:
//
//	ready <port>\n        every server started and listed, listening on <port>
//	error <reason>        start failed; <reason> runs to the end of the stream
//	                      and may span lines
//
// A pipe closed with no report means the serving process died (or closed it)
// before it was ready; the launcher then reports its exit status.
package launch
