package logflag

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	var b bytes.Buffer
	l, err := New(&b, "json", "warn")
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Error("database is read-only after an error", "err", "disk")
	var rec map[string]any
	if err := json.Unmarshal(b.Bytes(), &rec); err != nil || rec["level"] != "ERROR" || rec["err"] != "disk" {
		t.Fatalf("%q: %v %v", b.String(), rec, err)
	}
	b.Reset()
	l, _ = New(&b, "text", "info")
	l.Info("flushed", "tables", 1)
	if !strings.Contains(b.String(), "level=INFO msg=flushed tables=1") {
		t.Fatalf("text: %q", b.String())
	}
	for _, bad := range [][2]string{{"xml", "info"}, {"text", "loud"}} {
		if _, err := New(&b, bad[0], bad[1]); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	b.Reset()
	l, _ = New(&b, "text", "off")
	l.Error("x")
	if b.Len() != 0 {
		t.Errorf("off logged %q", b.String())
	}
}
