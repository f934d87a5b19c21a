package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cedar-policy/cedar-go"
)

// nested is n sets, each in the next.
func nested(n int) cedar.Value {
	v := cedar.NewSet()
	for range n - 1 {
		v = cedar.NewSet(v)
	}
	return v
}

func TestJSONToCedar(t *testing.T) {
	dec := func(f float64) cedar.Value {
		d, err := cedar.NewDecimalFromFloat(f)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	rec := func(kv ...any) cedar.Value {
		m := cedar.RecordMap{}
		for i := 0; i < len(kv); i += 2 {
			m[cedar.String(kv[i].(string))] = kv[i+1].(cedar.Value)
		}
		return cedar.NewRecord(m)
	}
	cases := []struct {
		name, json string
		want       cedar.Value // nil: not converted
	}{
		{"empty object", `{}`, rec()},
		{"scalars", `{"s":"x","t":true,"f":false,"i":-42,"z":-0}`, rec("s", cedar.String("x"), "t", cedar.True, "f", cedar.False, "i", cedar.Long(-42), "z", cedar.Long(0))},
		{"non-integers become decimals", `{"d":1.5,"e":2e3,"one":1.0}`, rec("d", dec(1.5), "e", dec(2000), "one", dec(1))},
		{"numbers beyond a decimal stay text", `{"big":1e20,"long":92233720368547758070}`, rec("big", cedar.String("1e20"), "long", cedar.String("92233720368547758070"))},
		{"nulls are left out", `{"n":null,"a":[null,1],"o":{"x":null}}`, rec("a", cedar.NewSet(cedar.Long(1)), "o", rec())},
		{"arrays become sets", `[1,"1",1,[]]`, cedar.NewSet(cedar.Long(1), cedar.String("1"), cedar.NewSet())},
		{"escapes", `{"k\u00e9":"a\"b\\c\n\ud83d\ude00"}`, rec("ké", cedar.String("a\"b\\c\n😀"))},
		{"the last of duplicate names", `{"a":1,"a":2}`, rec("a", cedar.Long(2))},
		{"whitespace", " \t\n{ \"a\" : [ 1 , 2 ] }\r\n", rec("a", cedar.NewSet(cedar.Long(1), cedar.Long(2)))},
		{"a top-level string", `"x"`, cedar.String("x")},
		{"nested 65 deep", strings.Repeat("[", 65) + strings.Repeat("]", 65), nested(65)},
		{"nested 66 deep", strings.Repeat("[", 66) + strings.Repeat("]", 66), nil},
		{"a top-level null", `null`, nil},
		{"truncated", `{"a":1`, nil},
		{"trailing bytes", `{} {}`, nil},
		{"missing value", `{"a":}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, sc := range []*scratch{nil, scratchPool.Get().(*scratch)} {
				got, ok := jsonToCedar(sc, json.RawMessage(c.json))
				switch {
				case c.want == nil:
					if ok {
						t.Errorf("%s: converted to %v, want not converted", c.json, got)
					}
				case !ok:
					t.Errorf("%s: not converted, want %v", c.json, c.want)
				case !got.Equal(c.want):
					t.Errorf("%s: %v, want %v", c.json, got, c.want)
				}
				if sc != nil {
					sc.release()
				}
			}
		})
	}
}

// Arguments are the caller's: an object shaped like Cedar's JSON escapes
// for entity references ("__entity") and extension values ("__extn")
// stays a record, so no argument can stand in for an entity or an
// extension value a policy compares it with.
func TestArgumentsStayRecords(t *testing.T) {
	entity := `{"__entity":{"type":"MCP::Server","id":"prod"}}`
	extn := `{"__extn":{"fn":"ip","arg":"10.1.2.3"}}`
	cases := []struct{ name, policy, args string }{
		{"an entity in a member", `context.args.s == MCP::Server::"prod"`, `{"s":` + entity + `}`},
		{"an entity as the arguments", `context.args == MCP::Server::"prod"`, entity},
		{"an entity in a set", `context.args.s.contains(MCP::Server::"prod")`, `{"s":[` + entity + `]}`},
		{"an extension value in a member", `context.args.ip.isInRange(ip("10.0.0.0/8"))`, `{"ip":` + extn + `}`},
		{"an extension value as the arguments", `context.args.isInRange(ip("10.0.0.0/8"))`, extn},
		{"a decimal escape", `context.args.d.greaterThan(decimal("1.0"))`, `{"d":{"__extn":{"fn":"decimal","arg":"2.0"}}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set, err := Parse(DefaultDeny, Source{Name: "p.cedar", Text: []byte(`@id("p") permit(principal, action, resource) when { ` + c.policy + ` };`)})
			if err != nil {
				t.Fatal(err)
			}
			if d := set.Decide(tool("fs", "read", "{}", c.args)); d.Allow {
				t.Errorf("arguments %s permitted by %q: they became an entity or extension value", c.args, c.policy)
			}
			v, ok := jsonToCedar(nil, json.RawMessage(c.args))
			if !ok {
				t.Fatalf("%s: not converted", c.args)
			}
			if !strings.Contains(v.String(), `"__e`) {
				t.Errorf("%s converted to %v: the escape's key is gone", c.args, v)
			}
		})
	}
	// The same policies do permit the values they name, so the test above
	// fails if the arguments ever become them.
	set, err := Parse(DefaultDeny, Source{Name: "p.cedar", Text: []byte(`@id("p") permit(principal, action, resource) when { context.args.d.greaterThan(decimal("1.0")) };`)})
	if err != nil {
		t.Fatal(err)
	}
	if d := set.Decide(tool("fs", "read", "{}", `{"d":2.0}`)); !d.Allow {
		t.Errorf("a decimal argument 2.0 not greater than 1.0: %+v", d)
	}
}

// BenchmarkJSONToCedar is the conversion of a call's arguments alone, as a
// decision that a policy reading context.args needs does it: BenchmarkDecide's
// small arguments, and a larger call (a file written, with options).
func BenchmarkJSONToCedar(b *testing.B) {
	large := `{"path":"/home/user/project/src/main.go","content":"` + strings.Repeat(`package main\n\nfunc main() {\n\tprintln(\"hello, \\\"world\\\"\")\n}\n`, 12) +
		`","options":{"mode":420,"createParents":true,"backup":null,"encoding":"utf-8","tags":["a","b","c"],"ratio":0.75},"edits":[{"line":1,"text":"x"},{"line":2,"text":"y"}]}`
	for _, c := range []struct{ name, args string }{
		{"small", `{"path":"/home/x/file.txt","n":3}`},
		{"large", large},
	} {
		b.Run(c.name, func(b *testing.B) {
			raw := json.RawMessage(c.args)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				sc := scratchPool.Get().(*scratch)
				if _, ok := jsonToCedar(sc, raw); !ok {
					b.Fatal("not converted")
				}
				sc.release()
			}
		})
	}
}
