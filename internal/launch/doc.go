// Package launch starts the gateway as a daemon and tells its launcher when it
// is ready.
//
// It sits at the very start of the sandbox path (contract part A): the SDK runs
// `mcp-gateway --config '<json>'`, the command line validates the config and
// calls [Launch], which
//
//  1. takes the launch lock (<PIDFile>.lock) so two launches cannot both start,
//     and refuses with [AlreadyRunningError] if the pid file names a live
//     mcp-gateway ([Running]);
//  2. writes the token file ([WriteTokenFile]: directory 0700, file 0600, no
//     trailing newline, atomic);
//  3. starts the serving process in a new session (its own process group),
//     with stdout and stderr appended to the log file, the handoff (config and
//     token) on its stdin and the write end of a readiness pipe as fd
//     [ReadyFD], and writes the pid file;
//  4. waits for the serving process to report on that pipe, for it to exit,
//     for the timeout, or for the context;
//  5. on `ready` releases the process (it outlives the launcher) and returns
//     its pid and port; on anything else signals every process of its session
//     (SIGTERM, then SIGKILL after a grace period), removes the token and pid
//     files and returns a [*StartError] holding the reason and the tail of the
//     log, where the failing server's stderr is.
//
// The serving process (`mcp-gateway serve --ready-fd=3 ...`) holds the other
// end: [ReadHandoff] reads its stdin, [OpenNotifier] opens the pipe, and
// [Notifier.Ready] or [Notifier.Fail] sends the one report.
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
