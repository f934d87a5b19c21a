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
	s := &server{enc: json.NewEncoder(w), flush: w.Flush, waiting: map[uint64]chan proto.Reply{}}
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

	wmu     sync.Mutex
	nextID  uint64
	waiting map[uint64]chan proto.Reply // inner calls waiting for their replies
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
			ch := s.waiting[m.Reply.ID]
			delete(s.waiting, m.Reply.ID)
			s.wmu.Unlock()
			if ch != nil { // else: the run that made it has ended
				ch <- *m.Reply
			}
		default:
			return fmt.Errorf("mcp-gateway-codemode: an unexpected message from the gateway (want run or reply)")
		}
	}
}

// run runs one program, its inner calls sent to the gateway.
func (s *server) run(req *proto.RunRequest) Outcome {
	call := func(ctx context.Context, tool int, args json.RawMessage) (json.RawMessage, error) {
		ch := make(chan proto.Reply, 1)
		s.wmu.Lock()
		s.nextID++
		id := s.nextID
		s.waiting[id] = ch
		s.wmu.Unlock()
		forget := func() {
			s.wmu.Lock()
			delete(s.waiting, id)
			s.wmu.Unlock()
		}
		if err := s.send(proto.Message{Call: &proto.Call{ID: id, Tool: tool, Arguments: args}}); err != nil {
			forget()
			return nil, err
		}
		select {
		case r := <-ch:
			switch {
			case r.TooLarge > 0:
				return nil, ResultTooLarge(r.TooLarge)
			case r.Error != "":
				return nil, errors.New(r.Error)
			}
			return r.Result, nil
		case <-ctx.Done():
			forget()
			return nil, ctx.Err()
		}
	}
	if !req.SameTools {
		s.tools = req.Tools
	}
	return Run(context.Background(), Program{Source: req.Source, Tools: s.tools, Call: call, Limits: req.Limits})
}
