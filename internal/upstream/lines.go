package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
	"golang.org/x/sys/unix"
)

// The stdio framing: one JSON-RPC message per line on the server's stdin
// and stdout. The process's writer side (the methods below) is the Conn's
// rpc.Sender; lineReader is its rpc.Reader.

// Send writes one message as a line (rpc.Sender): a notification, or the
// answer to one of the server's requests.
func (p *process) Send(ctx context.Context, _ string, msg []byte) error {
	if err := p.acquire(ctx); err != nil {
		return err
	}
	p.wbuf = append(p.wbuf[:0], msg...)
	_, err := p.flush(ctx)
	return err
}

func (p *process) writeRequest(ctx context.Context, id uint64, method string, params json.RawMessage) (sent bool, err error) {
	if err := p.acquire(ctx); err != nil {
		return false, err
	}
	p.wbuf = wire.AppendIntRequest(p.wbuf[:0], id, method, params)
	return p.flush(ctx)
}

func (p *process) notify(ctx context.Context, method string, params json.RawMessage) error {
	if err := p.acquire(ctx); err != nil {
		return err
	}
	p.wbuf = wire.AppendNotification(p.wbuf[:0], method, params)
	_, err := p.flush(ctx)
	return err
}

// acquire takes the writer lock on stdin. Its errors are ctx.Err() and
// errNotSent (the process is down).
func (p *process) acquire(ctx context.Context) error {
	select {
	case p.wsem <- struct{}{}:
	default:
		select {
		case p.wsem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		case <-p.down:
			return errNotSent
		}
	}
	if p.isDown.Load() {
		p.release()
		return errNotSent
	}
	return nil
}

func (p *process) release() {
	if cap(p.wbuf) > keptWriteBuffer {
		p.wbuf = nil
	}
	<-p.wsem
}

// flush writes wbuf, as one line (wire.OneLine), and a newline to stdin and
// releases the writer lock. A message that cannot be made one line (a line
// break in what is not valid JSON) is not written: flush returns an error
// wrapping ErrInvalidMessage. A ctx that ends during the write interrupts
// it: if nothing was written the call returns (false, ctx.Err()); if part
// was, the rest is written in the background, so the stream stays well
// formed, and it returns (true, ctx.Err()). Any other write error means the
// server stopped reading its stdin: the process is stopped and flush
// returns errNotSent.
func (p *process) flush(ctx context.Context) (sent bool, err error) {
	if err := p.oneLine(); err != nil {
		p.release()
		return false, err
	}
	return p.writeLine(ctx)
}

// oneLine makes wbuf one line (wire.OneLine); its error wraps
// ErrInvalidMessage, and leaves wbuf as it was.
func (p *process) oneLine() error {
	line, err := wire.OneLine(p.wbuf)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidMessage, err)
	}
	if len(line) != len(p.wbuf) { // compacted: a copy
		p.wbuf = append(p.wbuf[:0], line...)
	}
	return nil
}

// writeLine is flush for a wbuf already made one line.
//
// A write to a pipe its reader keeps up with returns at once, so the
// writer's ctx is not watched for it: a timer (wwatch, one per process,
// re-armed per write) fires only for a write still blocked after
// writeWatchAfter, and from then on the ctx's end interrupts it. A write
// that completes costs no hook on the ctx (context.AfterFunc's objects and
// its registration on the parent), and a ctx ending during a blocked write
// interrupts it at most writeWatchAfter later.
func (p *process) writeLine(ctx context.Context) (sent bool, err error) {
	p.wbuf = append(p.wbuf, '\n')
	if err := ctx.Err(); err != nil {
		p.release()
		return false, err
	}
	p.watchWrite(ctx)
	n, werr := p.stdin.Write(p.wbuf)
	p.unwatchWrite()
	switch {
	case werr == nil:
		p.release()
		return true, nil
	case errors.Is(werr, os.ErrDeadlineExceeded) && ctx.Err() != nil:
		if n == 0 {
			p.release()
			return false, ctx.Err()
		}
		rest := p.wbuf[n:]
		if !p.rpc.Go(func() {
			if _, err := p.stdin.Write(rest); err != nil {
				p.writeFailed(err)
			}
			p.release()
		}) {
			p.release()
		}
		return true, ctx.Err()
	default:
		p.release()
		p.writeFailed(werr)
		return false, errNotSent
	}
}

// writeWatchAfter is how long a write to stdin runs before its ctx is
// watched (writeLine).
const writeWatchAfter = 5 * time.Millisecond

// watchWrite arms the watch of the write about to start (the writer lock
// is held).
func (p *process) watchWrite(ctx context.Context) {
	p.dmu.Lock()
	p.wctx = ctx
	p.dmu.Unlock()
	p.wwatch.Reset(writeWatchAfter)
}

// unwatchWrite ends the watch of the write that returned. If its ctx hook
// ran, the write deadline it set is cleared, and the hook's seq made stale.
func (p *process) unwatchWrite() {
	p.wwatch.Stop()
	p.dmu.Lock()
	stop := p.wstop
	p.wctx, p.wstop = nil, nil
	p.dmu.Unlock()
	if stop != nil && !stop() {
		p.resetWriteDeadline()
	}
}

// writeStalled runs when a write has taken writeWatchAfter: from now on
// its ctx's end interrupts it. It finds no ctx when the write returned
// meanwhile.
func (p *process) writeStalled() {
	p.dmu.Lock()
	defer p.dmu.Unlock()
	if p.wctx == nil || p.wstop != nil {
		return
	}
	seq := p.wseq
	p.wstop = context.AfterFunc(p.wctx, func() { p.interruptWrite(seq) })
}

func (p *process) interruptWrite(seq uint64) {
	p.dmu.Lock()
	if p.wseq == seq {
		p.stdin.SetWriteDeadline(time.Unix(1, 0)) //nolint:errcheck // fails only once stdin is closed
	}
	p.dmu.Unlock()
}

func (p *process) resetWriteDeadline() {
	p.dmu.Lock()
	p.wseq++
	p.stdin.SetWriteDeadline(time.Time{}) //nolint:errcheck // fails only once stdin is closed
	p.dmu.Unlock()
}

// writeFailed handles a failed write to stdin. A server that has exited
// fails the write too (a broken pipe): then its exit is what happened, and
// wait reports it; the failure is the server's closing of its stdin only
// if it is still running after eofGrace.
func (p *process) writeFailed(err error) {
	if p.isDown.Load() {
		return // stdin was closed because it went down
	}
	t := time.NewTimer(eofGrace)
	defer t.Stop()
	select {
	case <-p.down: // exited, or stopped for another reason
		return
	case <-t.C:
	}
	f := &failure{kind: ErrProtocol, event: "stopped reading its stdin", detail: err.Error(), cause: err}
	if p.stop(f) {
		p.s.log.Warn(fmt.Sprintf("mcp server %q stopped reading its stdin; stopping it", p.s.opts.Name), "error", err)
		p.signal(unix.SIGKILL)
	}
}

// lineReader reads the server's stdout one line, one message, at a time
// (rpc.Reader). A line that is not one JSON-RPC message, or is longer than
// limit, ends the stream with a *badLine.
type lineReader struct {
	br    *bufio.Reader
	limit int
	long  []byte // a line longer than the reader's buffer, being assembled
	end   error  // why the stream ended, returned once its last line is read
	msg   wire.Message
}

// badLine is a line of stdout that is not one JSON-RPC message.
type badLine struct {
	line []byte
	what string // why, when it is not simply "not JSON-RPC"
}

func (e *badLine) Error() string { return "not a JSON-RPC message" }

func (r *lineReader) Read() (*wire.Message, error) {
	for r.end == nil {
		chunk, err := r.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(r.long)+len(chunk) > r.limit {
				return nil, r.tooLong(append(r.long, chunk...))
			}
			r.long = append(r.long, chunk...)
			continue
		}
		var line []byte // owned: the parsed message aliases it and outlives the reader's buffer
		if r.long != nil {
			line, r.long = append(r.long, chunk...), nil
		} else if len(chunk) > 0 {
			line = bytes.Clone(chunk)
		}
		r.end = err // the stream ends after this line
		switch {
		case len(trimNewline(line)) > r.limit:
			return nil, r.tooLong(line)
		case len(bytes.TrimSpace(line)) == 0:
			continue
		case wire.ParseInto(&r.msg, line) != nil:
			return nil, &badLine{line: line}
		}
		return &r.msg, nil
	}
	return nil, r.end
}

func (r *lineReader) tooLong(line []byte) error {
	return &badLine{line: line, what: fmt.Sprintf("a line longer than %d bytes", r.limit)}
}
