package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `# a comment
double n=2 keys=a,b
x
----
xx

  # indented comment
upper
y
----
Y
`

// TestRunDataDrivenRewrite: a -rewrite run replaces the expected outputs and
// keeps everything else byte for byte, with or without a final newline.
func TestRunDataDrivenRewrite(t *testing.T) {
	run := func(t *testing.T, d *Case) string {
		switch d.Cmd {
		case "double":
			if d.Int(t, "n", 0) != 2 || d.Str("keys", "") != "a,b" || !d.Has("keys") || d.Has("z") {
				t.Errorf("%s: args %v", d.Pos, d.Args)
			}
			return strings.Repeat(d.Input[0], 2)
		default:
			return strings.ToUpper(d.Input[0]) + "\n"
		}
	}
	defer func(old bool) { *rewrite = old }(*rewrite)
	for _, text := range []string{sample, strings.TrimSuffix(sample, "\n")} {
		path := filepath.Join(t.TempDir(), "cases")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		*rewrite = false
		RunDataDriven(t, path, run)
		*rewrite = true
		RunDataDriven(t, path, run)
		if got, _ := os.ReadFile(path); string(got) != text {
			t.Fatalf("rewrite changed the file:\n%s", got)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(text, "xx", "stale\nlines", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		RunDataDriven(t, path, run)
		if got, _ := os.ReadFile(path); string(got) != text {
			t.Fatalf("rewrite did not restore the output:\n%s", got)
		}
	}
}
