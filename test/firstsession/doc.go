// Package firstsession keeps an operator's first session true: it runs the
// README's block of commands between the first-session markers, as they
// are written, on the local emulator and PostgreSQL with the real binaries,
// and checks that the demo's content was duplicated to every destination
// of its policies and checked by the bit-integrity run end to end; it runs
// make local's script until a Ctrl-C; and it checks that the daemons, with
// the services stopped, say so in one line at once.
package firstsession
