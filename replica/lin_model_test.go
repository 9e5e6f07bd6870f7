package replica

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// The linearizability test's model: one register per key. Register keys
// (family "") take puts of unique values and gets; counter keys (family
// "counters", the counter merger) take increments, whose output is the
// value after the merge, and gets. A state is the key's value, "" for a
// missing key (no put writes "").

type linOpKind byte

const (
	linPut  linOpKind = 'p'
	linGet  linOpKind = 'g'
	linIncr linOpKind = 'i'
)

type linInput struct {
	Kind   linOpKind
	Family string
	Key    string
	Value  string // put: the value; incr: the decimal delta
}

type linOutput struct {
	Value   string
	Found   bool
	Unknown bool // a write whose outcome is unknown: any output fits
}

func linStep(state, in, out any) (bool, any) {
	s, i, o := state.(string), in.(linInput), out.(linOutput)
	switch i.Kind {
	case linPut:
		return true, i.Value
	case linGet:
		return o.Found == (s != "") && o.Value == s, s
	case linIncr:
		n, _ := strconv.ParseInt(s, 10, 64)
		d, _ := strconv.ParseInt(i.Value, 10, 64)
		next := strconv.FormatInt(n+d, 10)
		return o.Unknown || o.Value == next, next
	}
	return false, s
}

func linPartition(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	var keys []string
	for _, op := range history {
		k := op.Input.(linInput).Family + "/" + op.Input.(linInput).Key
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], op)
	}
	var parts [][]porcupine.Operation
	for _, k := range keys {
		parts = append(parts, byKey[k])
	}
	return parts
}

func linDescribe(in, out any) string {
	i, o := in.(linInput), out.(linOutput)
	switch {
	case i.Kind == linPut:
		return fmt.Sprintf("put(%s, %s)", i.Key, i.Value)
	case i.Kind == linGet && !o.Found:
		return fmt.Sprintf("get(%s) -> none", i.Key)
	case i.Kind == linGet:
		return fmt.Sprintf("get(%s) -> %s", i.Key, o.Value)
	case o.Unknown:
		return fmt.Sprintf("incr(%s, %s) -> ?", i.Key, i.Value)
	}
	return fmt.Sprintf("incr(%s, %s) -> %s", i.Key, i.Value, o.Value)
}

var linModel = porcupine.Model{
	Partition:         linPartition,
	Init:              func() any { return "" },
	Step:              linStep,
	DescribeOperation: linDescribe,
	DescribeState:     func(s any) string { return fmt.Sprintf("%q", s) },
}

// linHistory records operations as clients complete them. Following etcd's
// robustness validation, a write that failed after it may have been
// proposed is kept with an unknown output and a return time of infinity
// (it may take effect at any point after its call, or never); a write known
// not to have been proposed (NotLeaderError on every attempt) and a read
// that failed are dropped.
type linHistory struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	// figures
	known, unknown, dropped int
	unobserved              int // unknown puts no read saw, dropped by patched
}

func (h *linHistory) now() int64 { return int64(time.Since(h.start)) }

func (h *linHistory) add(client int, in linInput, out linOutput, call, ret int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if out.Unknown {
		ret = math.MaxInt64
		h.unknown++
	} else {
		h.known++
	}
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

func (h *linHistory) drop() {
	h.mu.Lock()
	h.dropped++
	h.mu.Unlock()
}

// check runs porcupine over the history; on a violation it writes the
// visualization to a temporary file and returns its path.
func (h *linHistory) check(timeout time.Duration) (porcupine.CheckResult, string, time.Duration) {
	ops := h.patched()
	t0 := time.Now()
	res := porcupine.CheckOperationsTimeout(linModel, ops, timeout)
	took := time.Since(t0)
	if res != porcupine.Illegal {
		return res, "", took
	}
	_, info := porcupine.CheckOperationsVerbose(linModel, ops, timeout)
	f, err := os.CreateTemp("", "sieve-linearizability-*.html")
	if err != nil {
		return res, "(no visualization: " + err.Error() + ")", took
	}
	defer f.Close()
	if err := porcupine.Visualize(linModel, info, f); err != nil {
		return res, "(visualization failed: " + err.Error() + ")", took
	}
	return res, f.Name(), took
}

// patched applies etcd's patchOperations to puts of unknown outcome
// (values are unique): one whose value no read returned is dropped (if it
// happened, nothing saw it before the next write: the history is
// linearizable with it iff without it); one whose value was read returns
// no later than the first such read returned.
func (h *linHistory) patched() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]int64{} // family/key/value -> earliest return of a read of it
	for _, op := range h.ops {
		in, out := op.Input.(linInput), op.Output.(linOutput)
		if in.Kind == linGet && out.Found {
			k := in.Family + "/" + in.Key + "/" + out.Value
			if r, ok := seen[k]; !ok || op.Return < r {
				seen[k] = op.Return
			}
		}
	}
	var ops []porcupine.Operation
	for _, op := range h.ops {
		in, out := op.Input.(linInput), op.Output.(linOutput)
		if in.Kind == linPut && out.Unknown {
			r, ok := seen[in.Family+"/"+in.Key+"/"+in.Value]
			if !ok {
				h.unobserved++
				continue
			}
			op.Return = r
		}
		ops = append(ops, op)
	}
	return ops
}
