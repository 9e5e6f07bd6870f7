package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// redisPyScript runs redis-py's default pipeline (transactional: MULTI
// ... EXEC) and a WATCH-guarded one that another connection breaks.
const redisPyScript = `
import sys, redis
r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]))
p = r.pipeline()
p.set("a", "1"); p.incr("a"); p.pfadd("h", "x", "y"); p.pfcount("h")
print(p.execute())
other = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]))
with r.pipeline() as p:
    p.watch("w"); p.multi(); p.set("w", "mine")
    other.set("w", "other")
    try:
        p.execute(); print("ran")
    except redis.WatchError:
        print("aborted")
print(r.get("w"))
`

// TestRedisPyPipeline: redis-py's default pipeline() is a transaction; it
// works, and its WATCH aborts when another client writes the key.
func TestRedisPyPipeline(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import redis").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3-redis is not installed (CI must install it): %v", err)
		}
		t.Skip("python3-redis is not installed (apt-get install python3-redis)")
	}
	s := startServer(t, "", nil)
	host, port, _ := strings.Cut(s.Addr(), ":")
	out, err := exec.Command(py, "-c", redisPyScript, host, port).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := "[True, 2, 1, 2]\naborted\nb'other'\n"
	if string(out) != want {
		t.Fatalf("redis-py printed\n%s\nwant\n%s", out, want)
	}
}
