package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"

	"github.com/mcp-gateway/mcp-gateway/internal/codemode/proto"
)

// CallFunc makes one inner call of a run, of the run's Tools[tool]: its
// CallToolResult, or an error for a call that got no result (a JSON-RPC
// error, the run ending), or a ResultTooLarge.
type CallFunc func(ctx context.Context, tool int, arguments json.RawMessage) (json.RawMessage, error)

// ResultTooLarge is the error of an inner call whose result (of that many
// bytes) was larger than the run's ResultBytes, and so not passed on.
type ResultTooLarge int

func (n ResultTooLarge) Error() string { return fmt.Sprintf("a result of %d bytes", int(n)) }

// StartFunc starts one inner call and returns at once; end is called
// once, from another goroutine, with what CallFunc would return. A runner
// starts its calls so (serve.go): a call's reply settles it with no
// goroutine waiting for it.
type StartFunc func(ctx context.Context, tool int, arguments json.RawMessage, end func(json.RawMessage, error))

// Program is one run's program and what it may call.
type Program struct {
	// Source is the body of an async function: it may await, and what it
	// returns (as JSON) is the run's value.
	Source string
	Tools  []proto.Func
	// Call makes an inner call, or Start starts one (when set).
	Call   CallFunc
	Start  StartFunc
	Limits proto.Limits
	// Index is Tools indexed by server and name (NewIndex(Tools)); nil:
	// made by the run. A runner keeps one across the runs of the same
	// tools, so a run's setup does not grow with their number.
	Index *Index
}

// Index is a run's tools by server and by name: what servers and
// servers.<server> list, and where each function is in Tools.
type Index struct {
	servers  []string // in the tools' order
	byServer map[string]*serverTools
}

type serverTools struct {
	names  []string       // in the tools' order
	byName map[string]int // name → index in Tools
}

// NewIndex indexes tools; a tool named twice at one server is its first.
func NewIndex(tools []proto.Func) *Index {
	x := &Index{byServer: map[string]*serverTools{}}
	for i, t := range tools {
		st := x.byServer[t.Server]
		if st == nil {
			st = &serverTools{byName: map[string]int{}}
			x.byServer[t.Server] = st
			x.servers = append(x.servers, t.Server)
		}
		if _, dup := st.byName[t.Name]; !dup {
			st.byName[t.Name] = i
			st.names = append(st.names, t.Name)
		}
	}
	return x
}

// The outcome of a run and its errors are proto's.
type (
	Outcome    = proto.Outcome
	Exception  = proto.Exception
	LimitError = proto.LimitError
)

var limitf = proto.Limitf

// ErrCancelled ends a run whose caller cancelled it.
var ErrCancelled = proto.ErrCancelled

// At most this much of console.log's output is kept.
const (
	maxLogLines = 200
	maxLogBytes = 64 << 10
)

// memorySample is the heap the memory ceiling watches: bytes of heap
// objects, live or not yet swept. The runtime keeps it current without
// stopping the world.
const memorySample = "/memory/classes/heap/objects:bytes"

// liveSample is the live heap as the last collection found it: a run's
// growth is counted from it.
const liveSample = "/gc/heap/live:bytes"

// settleAfter is how long a program's code runs before its memory is
// measured from a fresh collection (a run that mostly waits for its inner
// calls, or ends sooner, never pays for one).
const settleAfter = 100 * time.Millisecond

// memoryEvery is how often a run's heap growth is sampled while its code runs.
const memoryEvery = 2 * time.Millisecond

// unsafeGlobals are taken from the program: binary buffers allocate their
// whole length at once, beyond what sampling the heap can stop in time.
var unsafeGlobals = []string{"ArrayBuffer", "SharedArrayBuffer", "DataView", "Atomics",
	"Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
	"Int32Array", "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"}

// run is one program's run. Its fields are the engine's goroutine's,
// but for the ones the inner calls' goroutines and the watchers share
// (done, sem, running).
type run struct {
	p    Program
	lim  proto.Limits
	ctx  context.Context
	vm   *goja.Runtime
	done chan completion // inner calls that ended
	over chan struct{}   // closed when the run ends: nobody reads done any more
	sem  chan struct{}   // inner calls in flight

	pending int // inner calls not yet settled
	calls   int
	cpu     time.Duration
	running atomic.Bool // the program's code is running (the memory watcher samples only then)
	logs    []string
	logSize int

	stringify, parse goja.Callable
	errorCtor        goja.Value
}

// completion is an inner call that ended, to be settled on the engine's goroutine.
type completion struct {
	tool            int // in p.Tools
	result          json.RawMessage
	err             error
	resolve, reject func(any) error
}

// Run runs a program to its end: its value, or why it failed.
func Run(ctx context.Context, p Program) Outcome {
	began := time.Now()
	r := &run{p: p, lim: p.Limits.WithDefaults()}
	out := r.run(ctx)
	out.Calls, out.Logs, out.Elapsed, out.CPU = r.calls, r.logs, time.Since(began), r.cpu
	return out
}

func (r *run) run(parent context.Context) Outcome {
	if n := len(r.p.Source); n > r.lim.ProgramBytes {
		return Outcome{Err: limitf(proto.LimitProgramBytes, "the program is %d bytes, more than %d", n, r.lim.ProgramBytes)}
	}
	prg, err := goja.Compile("program.js", "(async function () {\n"+r.p.Source+"\n})()", false)
	if err != nil {
		return Outcome{Err: &Exception{Message: "it does not compile (line numbers count from the program's first line): " + err.Error()}}
	}
	ctx, cancel := context.WithTimeoutCause(parent, r.lim.Timeout,
		limitf(proto.LimitTimeout, "the run took longer than %s", r.lim.Timeout))
	defer cancel() // ends the inner calls still in flight, at their servers
	r.ctx = ctx
	r.done = make(chan completion, r.lim.Concurrent)
	r.over = make(chan struct{})
	defer close(r.over)
	r.sem = make(chan struct{}, r.lim.Concurrent)
	if err := r.setup(); err != nil {
		return Outcome{Err: err}
	}
	stopWall := context.AfterFunc(ctx, func() { r.vm.Interrupt(r.ctxErr()) })
	defer stopWall()
	stopMemory := r.watchMemory()
	defer stopMemory()

	var v goja.Value
	if err := r.js(func() (err error) { v, err = r.vm.RunProgram(prg); return err }); err != nil {
		return Outcome{Err: err}
	}
	promise, ok := v.Export().(*goja.Promise)
	if !ok {
		return Outcome{Err: &Exception{Message: "the program did not run as an async function"}}
	}
	for promise.State() == goja.PromiseStatePending {
		if r.pending == 0 {
			return Outcome{Err: &Exception{Message: "it awaits a promise that nothing settles (a program has no timers; only its inner calls settle promises)"}}
		}
		select {
		case c := <-r.done:
			r.pending--
			if err := r.js(func() error { return r.settle(c) }); err != nil {
				return Outcome{Err: err}
			}
		case <-ctx.Done():
			return Outcome{Err: r.ctxErr()}
		}
	}
	if promise.State() == goja.PromiseStateRejected {
		return Outcome{Err: &Exception{Message: describe(promise.Result())}}
	}
	var value json.RawMessage
	err = r.js(func() error {
		res := promise.Result()
		if goja.IsUndefined(res) {
			value = json.RawMessage("null")
			return nil
		}
		s, err := r.stringify(goja.Undefined(), res)
		if err != nil {
			return err
		}
		if goja.IsUndefined(s) { // a function, a symbol
			value = json.RawMessage("null")
			return nil
		}
		if n := len(s.String()); n > r.lim.ReturnBytes {
			return limitf(proto.LimitReturnBytes, "the returned value is %d bytes of JSON, more than %d", n, r.lim.ReturnBytes)
		}
		value = json.RawMessage(s.String())
		return nil
	})
	if err != nil {
		return Outcome{Err: err}
	}
	return Outcome{Value: value}
}

// ctxErr is why the run's context ended: its timeout, or the caller.
func (r *run) ctxErr() error {
	var le *LimitError
	if cause := context.Cause(r.ctx); errors.As(cause, &le) {
		return le
	}
	return ErrCancelled
}

// js runs the program's code (f) under the CPU limit, and turns what
// stopped it into the run's error.
func (r *run) js(f func() error) error {
	left := r.lim.CPU - r.cpu
	if left <= 0 {
		return r.cpuExceeded()
	}
	fired := atomic.Bool{}
	t := time.AfterFunc(left, func() { fired.Store(true); r.vm.Interrupt(r.cpuExceeded()) })
	r.running.Store(true)
	began := time.Now()
	err := f()
	r.cpu += time.Since(began)
	r.running.Store(false)
	if !t.Stop() || fired.Load() {
		return r.cpuExceeded()
	}
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if e, ok := ie.Value().(error); ok {
			return e
		}
		return &Exception{Message: fmt.Sprint(ie.Value())}
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return &Exception{Message: describe(ex.Value())}
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return &Exception{Message: "too deep a recursion: " + so.Error()}
	}
	return err
}

func (r *run) cpuExceeded() *LimitError {
	return limitf(proto.LimitCPU, "the program's code ran for more than %s", r.lim.CPU)
}

// watchMemory samples the heap while the program's code runs and
// interrupts it once the live heap grew by more than the ceiling since the
// run began: when the heap's objects pass the live heap at the start plus
// the ceiling, a collection tells what of it is garbage (not the run's);
// after one that finds it is, the next is when another ceiling's worth was
// allocated. It returns the function that stops it.
func (r *run) watchMemory() func() {
	samples := []metrics.Sample{{Name: memorySample}, {Name: liveSample}}
	read := func() (objects, live uint64) {
		metrics.Read(samples)
		if samples[0].Value.Kind() != metrics.KindUint64 || samples[1].Value.Kind() != metrics.KindUint64 {
			return 0, 0
		}
		return samples[0].Value.Uint64(), samples[1].Value.Uint64()
	}
	_, base := read()
	ceiling := uint64(r.lim.MemoryBytes)
	trigger := base + ceiling
	ran := 0 // samples taken while the code ran
	settled := false
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(memoryEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if !r.running.Load() {
				continue
			}
			ran++
			if !settled && time.Duration(ran)*memoryEvery > settleAfter {
				// The live heap of the last collection may hold what is
				// garbage now (an earlier run's): a run that lasts is
				// measured from a fresh one.
				settled = true
				runtime.GC()
				if _, live := read(); live < base {
					base, trigger = live, live+ceiling
				}
			}
			if now, _ := read(); now <= trigger {
				continue
			}
			runtime.GC()
			now, _ := read()
			if now > base+ceiling {
				r.vm.Interrupt(limitf(proto.LimitMemory, "the run's heap grew by %d MiB while the program ran, more than %d MiB", (now-base)>>20, ceiling>>20))
				return
			}
			trigger = now + ceiling
		}
	}()
	return func() { close(stop) }
}

// setup makes the engine and what the program sees: servers.<server>.<tool>,
// console; no timers, no binary buffers.
func (r *run) setup() error {
	vm := goja.New()
	r.vm = vm
	vm.SetMaxCallStackSize(2048)
	global := vm.GlobalObject()
	for _, name := range unsafeGlobals {
		_ = global.Delete(name)
	}
	json := global.Get("JSON").ToObject(vm)
	var ok bool
	if r.stringify, ok = goja.AssertFunction(json.Get("stringify")); !ok {
		return errors.New("code-mode: the engine has no JSON.stringify")
	}
	if r.parse, ok = goja.AssertFunction(json.Get("parse")); !ok {
		return errors.New("code-mode: the engine has no JSON.parse")
	}
	r.errorCtor = global.Get("Error")

	// servers and each servers.<server> make a tool's function when the
	// program first reaches it: a run over a thousand tools that calls
	// three makes three, and reads the index (made once per tool set).
	x := r.p.Index
	if x == nil {
		x = NewIndex(r.p.Tools)
	}
	servers := vm.NewDynamicObject(&lazyObject{keys: x.servers, has: func(name string) bool { return x.byServer[name] != nil },
		make: func(name string) goja.Value {
			st := x.byServer[name]
			return vm.NewDynamicObject(&lazyObject{keys: st.names, has: func(tool string) bool { _, ok := st.byName[tool]; return ok },
				make: func(tool string) goja.Value { return vm.ToValue(r.function(st.byName[tool])) }})
		}})
	if err := vm.Set("servers", servers); err != nil {
		return err
	}
	if err := r.guardStrings(); err != nil {
		return err
	}
	console := vm.NewObject()
	for _, level := range []string{"log", "info", "warn", "error", "debug"} {
		if err := console.Set(level, r.log); err != nil {
			return err
		}
	}
	return vm.Set("console", console)
}

// stringGuard wraps the string methods that make a string of a length
// the program chooses, so one call cannot allocate past the memory
// ceiling before the watcher samples the heap.
const stringGuard = `(function (limit, refuse) {
  for (const name of ["repeat", "padStart", "padEnd"]) {
    const orig = String.prototype[name];
    Object.defineProperty(String.prototype, name, {writable: true, configurable: true, value: {[name](n) {
      const len = name === "repeat" ? String(this).length * Number(n) : Number(n);
      if (len > limit) refuse("String.prototype." + name + " would make a string of " + len + " characters");
      return orig.apply(this, arguments);
    }}[name]});
  }
})`

// stringGuardProgram is stringGuard compiled once, for every run.
var stringGuardProgram = goja.MustCompile("guard.js", stringGuard, true)

func (r *run) guardStrings() error {
	f, err := r.vm.RunProgram(stringGuardProgram)
	if err != nil {
		return err
	}
	guard, _ := goja.AssertFunction(f)
	refuse := func(what string) {
		r.vm.Interrupt(limitf(proto.LimitMemory, "%s, more than the ceiling of %d MiB", what, r.lim.MemoryBytes>>20))
	}
	_, err = guard(goja.Undefined(), r.vm.ToValue(r.lim.MemoryBytes/2), r.vm.ToValue(refuse))
	return err
}

// lazyObject is a read-only object whose properties are made when first
// read.
type lazyObject struct {
	keys []string
	has  func(key string) bool // key is one of keys
	make func(key string) goja.Value
	made map[string]goja.Value
}

func (o *lazyObject) Get(key string) goja.Value {
	if v, ok := o.made[key]; ok {
		return v
	}
	if !o.has(key) {
		return nil
	}
	if o.made == nil {
		o.made = map[string]goja.Value{}
	}
	v := o.make(key)
	o.made[key] = v
	return v
}
func (o *lazyObject) Set(string, goja.Value) bool { return false }
func (o *lazyObject) Has(key string) bool         { return o.has(key) }
func (o *lazyObject) Delete(string) bool          { return false }
func (o *lazyObject) Keys() []string              { return o.keys }

// log keeps a console line, up to maxLogLines and maxLogBytes.
func (r *run) log(call goja.FunctionCall) goja.Value {
	if len(r.logs) >= maxLogLines || r.logSize >= maxLogBytes {
		return goja.Undefined()
	}
	parts := make([]string, len(call.Arguments))
	for i, a := range call.Arguments {
		if o, ok := a.(*goja.Object); ok && o.ClassName() != "Error" {
			if s, err := r.stringify(goja.Undefined(), a); err == nil && !goja.IsUndefined(s) {
				parts[i] = s.String()
				continue
			}
		}
		parts[i] = a.String()
	}
	line := strings.Join(parts, " ")
	if room := maxLogBytes - r.logSize; len(line) > room {
		line = line[:room]
	}
	r.logs = append(r.logs, line)
	r.logSize += len(line)
	return goja.Undefined()
}

// function is a tool as the program calls it: one argument (an object, the
// tool's arguments), a promise of its value.
func (r *run) function(i int) func(goja.FunctionCall) goja.Value {
	t := r.p.Tools[i]
	return func(call goja.FunctionCall) goja.Value {
		vm := r.vm
		args := json.RawMessage(`{}`)
		if a := call.Argument(0); !goja.IsUndefined(a) && !goja.IsNull(a) {
			s, err := r.stringify(goja.Undefined(), a)
			if err != nil {
				panic(err)
			}
			if o, ok := a.(*goja.Object); !ok || o.ClassName() == "Array" || goja.IsUndefined(s) {
				panic(vm.NewTypeError("servers.%s.%s takes one object, its arguments, not %s", t.Server, t.Name, a.String()))
			}
			args = json.RawMessage(s.String())
		}
		r.calls++
		if r.calls > r.lim.Calls {
			vm.Interrupt(limitf(proto.LimitCalls, "the program made more than %d inner calls", r.lim.Calls))
			return goja.Undefined()
		}
		promise, resolve, reject := vm.NewPromise()
		r.pending++
		c := completion{tool: i, resolve: resolve, reject: reject}
		if r.p.Start == nil {
			go r.callInner(c, args)
			return vm.ToValue(promise)
		}
		select {
		case r.sem <- struct{}{}: // a slot is free: start it from here
			r.start(c, args)
		default:
			go func() {
				select {
				case r.sem <- struct{}{}:
					r.start(c, args)
				case <-r.ctx.Done():
					c.err = r.ctx.Err()
					r.deliver(c)
				}
			}()
		}
		return vm.ToValue(promise)
	}
}

// callInner makes one inner call, on its own goroutine, once a slot of
// the concurrent limit is free, and hands its end to the engine.
func (r *run) callInner(c completion, args json.RawMessage) {
	select {
	case r.sem <- struct{}{}:
		c.result, c.err = r.p.Call(r.ctx, c.tool, args)
		<-r.sem
	case <-r.ctx.Done():
		c.err = r.ctx.Err()
	}
	r.deliver(c)
}

// start starts an inner call (Program.Start) holding a slot of the
// concurrent limit, which its end frees.
func (r *run) start(c completion, args json.RawMessage) {
	r.p.Start(r.ctx, c.tool, args, func(result json.RawMessage, err error) {
		c.result, c.err = result, err
		<-r.sem
		r.deliver(c)
	})
}

// deliver hands an inner call's end to the engine.
func (r *run) deliver(c completion) {
	select {
	case r.done <- c:
	case <-r.over:
	}
}

// settle settles an inner call's promise with its value, or rejects it
// with an exception the program can catch.
func (r *run) settle(c completion) error {
	t := r.p.Tools[c.tool]
	label := t.Server + "." + t.Name
	var tooLarge ResultTooLarge
	if errors.As(c.err, &tooLarge) {
		return limitf(proto.LimitResultBytes, "%s returned %d bytes, more than %d", label, int(tooLarge), r.lim.ResultBytes)
	}
	if c.err != nil {
		if r.ctx.Err() != nil {
			return r.ctxErr()
		}
		return c.reject(r.exception("CallError", fmt.Sprintf("%s: %v", label, c.err), t, nil))
	}
	if n := len(c.result); n > r.lim.ResultBytes {
		return limitf(proto.LimitResultBytes, "%s returned %d bytes, more than %d", label, n, r.lim.ResultBytes)
	}
	v, err := valueOf(c.result)
	if err != nil {
		return c.reject(r.exception("CallError", fmt.Sprintf("%s: its result is not a tool result: %v", label, err), t, nil))
	}
	if v.denied != nil {
		return c.reject(r.exception("PolicyDenied", v.text, t, map[string]json.RawMessage{
			"code": v.deniedCode, "policies": v.deniedPolicies, "content": v.value}))
	}
	if v.isError {
		msg := v.text
		if msg == "" {
			msg = label + " failed"
		}
		return c.reject(r.exception("ToolError", msg, t, map[string]json.RawMessage{"content": v.value}))
	}
	val, err := r.parse(goja.Undefined(), r.vm.ToValue(string(v.value)))
	if err != nil {
		return err
	}
	return c.resolve(val)
}

// exception is an Error named name, with the tool it came from and the
// given properties (JSON).
func (r *run) exception(name, message string, t proto.Func, props map[string]json.RawMessage) goja.Value {
	ctor, _ := r.errorCtor.(*goja.Object)
	e, err := r.vm.New(ctor, r.vm.ToValue(message))
	if err != nil {
		return r.vm.ToValue(message)
	}
	_ = e.Set("name", name)
	_ = e.Set("server", t.Server)
	_ = e.Set("tool", t.Name)
	for k, raw := range props {
		if raw == nil {
			continue
		}
		if v, err := r.parse(goja.Undefined(), r.vm.ToValue(string(raw))); err == nil {
			_ = e.Set(k, v)
		}
	}
	return e
}

// describe is what a thrown value says: an Error's stack (its name,
// message and where), else its string.
func describe(v goja.Value) string {
	if o, ok := v.(*goja.Object); ok {
		if s := o.Get("stack"); s != nil && !goja.IsUndefined(s) && s.String() != "" {
			return s.String()
		}
	}
	if v == nil {
		return "undefined"
	}
	return v.String()
}
