package main

import "testing"

// TestCountersEndToEnd drives CMS.* and TOPK.* through go-redis: RedisBloom's
// replies and errors, WRONGTYPE against strings and the other sketches, and
// the values surviving a restart.
func TestCountersEndToEnd(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, nil)
	c := newClient(t, s.Addr())
	steps := []struct {
		args []any
		want string
	}{
		{[]any{"cms.initbydim", "cms", "2000", "5"}, "OK"},
		{[]any{"cms.initbydim", "cms", "2000", "5"}, "ERR:CMS: key already exists"},
		{[]any{"cms.initbydim", "bad", "0", "5"}, "ERR:CMS: invalid width"},
		{[]any{"cms.initbyprob", "cms2", "0.001", "0.01"}, "OK"},
		{[]any{"cms.incrby", "cms", "a", "3", "b", "5"}, "[3 5]"},
		{[]any{"cms.incrby", "cms", "a", "2"}, "[5]"},
		{[]any{"cms.incrby", "cms", "a", "x"}, "ERR:CMS: Cannot parse number"},
		{[]any{"cms.incrby", "nocms", "a", "1"}, "ERR:CMS: key does not exist"},
		{[]any{"cms.query", "cms", "a", "b", "c"}, "[5 5 0]"},
		{[]any{"cms.info", "cms"}, "[width 2000 depth 5 count 10]"},
		{[]any{"cms.initbydim", "dst", "2000", "5"}, "OK"},
		{[]any{"cms.merge", "dst", "1", "cms", "weights", "3"}, "OK"},
		{[]any{"cms.query", "dst", "a"}, "[15]"},
		{[]any{"cms.merge", "dst", "1", "cms2"}, "ERR:CMS: width/depth is not equal"},
		{[]any{"cms.merge", "dst", "2", "cms"}, "ERR:CMS: wrong number of keys/weights"},
		{[]any{"type", "cms"}, "CMSk-TYPE"},
		{[]any{"set", "str", "v"}, "OK"},
		{[]any{"cms.query", "str", "a"}, "ERR:" + errWrongTypeMsg},
		{[]any{"get", "cms"}, "ERR:" + errWrongTypeMsg},
		{[]any{"topk.reserve", "tk", "2", "50", "4", "0.9"}, "OK"},
		{[]any{"topk.reserve", "tk", "2"}, "ERR:TopK: key already exists"},
		{[]any{"topk.add", "tk", "a", "b", "a"}, "[<nil> <nil> <nil>]"},
		{[]any{"topk.incrby", "tk", "c", "10"}, "[b]"},
		{[]any{"topk.query", "tk", "a", "b", "c"}, "[1 0 1]"},
		{[]any{"topk.list", "tk"}, "[c a]"},
		{[]any{"topk.list", "tk", "withcount"}, "[c 10 a 2]"},
		{[]any{"topk.info", "tk"}, "[k 2 width 50 depth 4 decay 0.9]"},
		{[]any{"topk.add", "notk", "a"}, "ERR:TopK: key does not exist"},
		{[]any{"topk.add", "cms", "a"}, "ERR:" + errWrongTypeMsg},
		{[]any{"type", "tk"}, "TopK-TYPE"},
		{[]any{"bf.add", "tk", "x"}, "ERR:" + errWrongTypeMsg},
	}
	for i, st := range steps {
		if got := do(c, st.args...); got != st.want {
			t.Fatalf("step %d %v: got %q, want %q", i, st.args, got, st.want)
		}
	}
	c.Close()
	s.Close()
	s = startServer(t, dir, nil)
	c = newClient(t, s.Addr())
	for _, st := range []struct {
		args []any
		want string
	}{
		{[]any{"cms.query", "dst", "a", "b"}, "[15 15]"},
		{[]any{"topk.list", "tk", "withcount"}, "[c 10 a 2]"},
	} {
		if got := do(c, st.args...); got != st.want {
			t.Fatalf("after restart %v: got %q, want %q", st.args, got, st.want)
		}
	}
}
