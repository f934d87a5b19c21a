package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/codemode/proto"
)

// Serve is a runner process's life (cmd/mcp-gateway-codemode): it reads
// runs from in and serves them one at a time, each in a fresh engine,
// sending their inner calls and their ends to out (the messages of package
// proto). It returns when in ends (the gateway closed it, or went away),
// or after idle without a run (0: never).
func Serve(in io.Reader, out io.Writer, idle time.Duration) error {
	w := bufio.NewWriterSize(out, 64<<10)
	s := &server{enc: json.NewEncoder(w), flush: w.Flush, waiting: map[uint64]func(proto.Reply){}}
	runs := make(chan *proto.RunRequest)
	readErr := make(chan error, 1)
	go func() { readErr <- s.read(json.NewDecoder(bufio.NewReaderSize(in, 64<<10)), runs) }()
	var idleC <-chan time.Time
	for {
		var timer *time.Timer
		if idle > 0 {
			timer = time.NewTimer(idle)
			idleC = timer.C
		}
		select {
		case req := <-runs:
			if timer != nil {
				timer.Stop()
			}
			out := s.run(req)
			if err := s.send(proto.Message{Done: proto.DoneOf(out)}); err != nil {
				return err
			}
		case err := <-readErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case <-idleC:
			return nil
		}
	}
}

type server struct {
	mu    sync.Mutex // enc, flush
	enc   *json.Encoder
	flush func() error

	tools []proto.Func // the last run's
	index *Index       // tools', kept for the runs of the same tools

	wmu     sync.Mutex
	nextID  uint64
	waiting map[uint64]func(proto.Reply) // inner calls waiting for their replies
}

func (s *server) send(m proto.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enc.Encode(m); err != nil {
		return err
	}
	return s.flush()
}

// read hands runs to Serve and replies to the inner calls waiting for them.
func (s *server) read(dec *json.Decoder, runs chan<- *proto.RunRequest) error {
	for {
		var m proto.Message
		if err := dec.Decode(&m); err != nil {
			return err
		}
		switch {
		case m.Run != nil:
			runs <- m.Run
		case m.Reply != nil:
			s.wmu.Lock()
			end := s.waiting[m.Reply.ID]
			delete(s.waiting, m.Reply.ID)
			s.wmu.Unlock()
			if end != nil { // else: the run that made it has ended
				end(*m.Reply)
			}
		default:
			return fmt.Errorf("mcp-gateway-codemode: an unexpected message from the gateway (want run or reply)")
		}
	}
}

// run runs one program, its inner calls sent to the gateway: a call's
// reply ends it from the reader's goroutine.
func (s *server) run(req *proto.RunRequest) Outcome {
	start := func(ctx context.Context, tool int, args json.RawMessage, end func(json.RawMessage, error)) {
		var once sync.Once
		var stop func() bool
		finish := func(res json.RawMessage, err error) {
			once.Do(func() { stop(); end(res, err) })
		}
		forget := func(id uint64) bool {
			s.wmu.Lock()
			defer s.wmu.Unlock()
			_, ok := s.waiting[id]
			delete(s.waiting, id)
			return ok
		}
		s.wmu.Lock()
		s.nextID++
		id := s.nextID
		// The run's end (its timeout) ends a call still waiting.
		stop = context.AfterFunc(ctx, func() {
			if forget(id) {
				finish(nil, ctx.Err())
			}
		})
		s.waiting[id] = func(r proto.Reply) {
			switch {
			case r.TooLarge > 0:
				finish(nil, ResultTooLarge(r.TooLarge))
			case r.Error != "":
				finish(nil, errors.New(r.Error))
			default:
				finish(r.Result, nil)
			}
		}
		s.wmu.Unlock()
		if err := s.send(proto.Message{Call: &proto.Call{ID: id, Tool: tool, Arguments: args}}); err != nil && forget(id) {
			go finish(nil, err) // never on the engine's goroutine, which is the caller
		}
	}
	if !req.SameTools {
		s.tools, s.index = req.Tools, nil
	}
	if s.index == nil {
		s.index = NewIndex(s.tools)
	}
	return Run(context.Background(), Program{Source: req.Source, Tools: s.tools, Index: s.index, Start: start, Limits: req.Limits})
}
