//go:build unix

package sieve

import (
	"bufio"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sievedb/sieve/internal/testutil"
	"github.com/stretchr/testify/require"
)

// Environment of the child process of TestKill9.
const (
	killChildDir   = "SIEVE_KILL_CHILD_DIR"
	killChildRound = "SIEVE_KILL_CHILD_ROUND"
	killChildSeed  = "SIEVE_KILL_CHILD_SEED"
)

// killOptions are the options of both processes: small memtables and an
// eager L0 trigger, so that flushes and compactions run when the kill
// comes.
func killOptions() *Options {
	return &Options{MemTableSize: 64 << 10, L0CompactionTrigger: 2, L0StopWritesTrigger: 12,
		LBaseMaxBytes: 256 << 10, TargetFileSize: 64 << 10, BlockSize: 1024}
}

// killValue is the value the child writes for key; the parent recomputes it.
func killValue(key string) string {
	h := fnv.New32a()
	h.Write([]byte(key))
	return key + "|" + strings.Repeat("v", int(h.Sum32()%400))
}

// TestKill9 runs the database in a child process (this test binary,
// re-executed to run TestKill9Child) on a real directory with the OS file
// system. The child writes with Sync and prints each acknowledged write;
// the parent SIGKILLs it at a random moment, reopens the directory and
// checks that every acknowledged write is there with its value (and that
// no write the child had not started is), then starts the next round on
// the same directory. 10 rounds (3 with -short or -race); SIEVE_LONG=1
// runs 200.
func TestKill9(t *testing.T) {
	if os.Getenv(killChildDir) != "" {
		t.Skip("in the child")
	}
	seed := testutil.Seed(t)
	rng := rand.New(rand.NewSource(seed))
	rounds := 10
	switch {
	case relLong():
		rounds = envInt("SIEVE_KILL_ROUNDS", 200)
	case testing.Short() || relRaceEnabled:
		rounds = 3
	}
	dir := t.TempDir()
	want := map[string]string{} // every acknowledged write of every round
	totalAcked, verified := 0, 0
	for round := 0; round < rounds; round++ {
		res, err := runKillChild(dir, round, seed+int64(round), time.Duration(5+rng.Intn(150))*time.Millisecond)
		require.NoError(t, err, "round %d (seed %d)", round, seed)
		var deleted []string
		for step := 1; step <= res.lastStep; step++ {
			keys, ok := res.acked[step]
			if old, del := res.intents[step]; del {
				delete(want, old)
				if ok {
					deleted = append(deleted, old)
				}
			}
			for _, k := range keys {
				want[k] = killValue(k)
			}
			if ok {
				totalAcked++
			}
		}
		// The step in flight when the kill came may have deleted its key.
		if old, ok := res.intents[res.lastStep+1]; ok {
			delete(want, old)
		}

		db, err := Open(dir, killOptions())
		require.NoError(t, err, "reopen after kill %d (seed %d)", round, seed)
		for k, v := range want {
			got, err := db.Get([]byte(k))
			require.NoError(t, err, "round %d: acknowledged key %s (seed %d)", round, k, seed)
			require.Equal(t, v, string(got), "round %d: key %s", round, k)
			verified++
		}
		for _, k := range deleted {
			_, err := db.Get([]byte(k))
			require.ErrorIs(t, err, ErrNotFound, "round %d: acknowledged delete of %s", round, k)
		}
		// The child acknowledges each step before it starts the next:
		// two steps past the last acknowledged one were never begun.
		for step := res.lastStep + 2; step < res.lastStep+7; step++ {
			_, err := db.Get([]byte(killKey(round, step)))
			require.ErrorIs(t, err, ErrNotFound, "round %d: step %d was never begun", round, step)
		}
		require.NoError(t, db.CheckInvariants(true))
		require.NoError(t, db.Close())
	}
	t.Logf("kill -9: %d rounds, %d writes acknowledged, %d reads of acknowledged writes verified after the kills (%d keys live at the end)",
		rounds, totalAcked, verified, len(want))
}

func killKey(round, step int) string { return fmt.Sprintf("r%03d-%06d", round, step) }

// killResult is what a child acknowledged before it was killed.
type killResult struct {
	acked    map[int][]string // step -> keys written
	intents  map[int]string   // step -> key it deletes (announced before the write)
	lastStep int              // the last acknowledged step
}

// runKillChild starts the child for one round, kills it delay after it
// opened the database, and returns what it acknowledged.
func runKillChild(dir string, round int, seed int64, delay time.Duration) (*killResult, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Child$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), killChildDir+"="+dir, killChildRound+"="+strconv.Itoa(round),
		killChildSeed+"="+strconv.FormatInt(seed, 10))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	res := &killResult{acked: map[int][]string{}, intents: map[int]string{}}
	ready := make(chan struct{})
	done := make(chan struct{})
	var childErr string
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) >= 3 && f[0] == "ack":
				step, _ := strconv.Atoi(f[1])
				res.acked[step] = f[2:]
				res.lastStep = max(res.lastStep, step)
			case len(f) == 4 && f[0] == "intent" && f[2] == "del":
				step, _ := strconv.Atoi(f[1])
				res.intents[step] = f[3]
			case len(f) == 1 && f[0] == "ready":
				once.Do(func() { close(ready) })
			case len(f) > 0 && f[0] == "error":
				childErr = sc.Text()
			}
		}
	}()
	select {
	case <-ready:
		time.Sleep(delay)
	case <-done:
	case <-time.After(2 * time.Minute):
	}
	cmd.Process.Signal(syscall.SIGKILL)
	werr := cmd.Wait()
	<-done // the pipe is closed: every line the child wrote has been read
	var ee *exec.ExitError
	switch {
	case childErr != "":
		return nil, fmt.Errorf("child: %s\n%s", childErr, stderr.String())
	case !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL:
		return nil, fmt.Errorf("child did not die by SIGKILL: %v\n%s", werr, stderr.String())
	}
	return res, nil
}

// TestKill9Child is the child of TestKill9 (it skips unless run by it). It
// opens the database in the directory it is given and writes until it is
// killed: Sync puts, Sync two-key batches and Sync deletes of keys from
// earlier rounds, printing each acknowledged step ("ack key..." or "del
// key") after it returns, with NoSync writes to other keys in between.
func TestKill9Child(t *testing.T) {
	dir := os.Getenv(killChildDir)
	if dir == "" {
		t.Skip("run by TestKill9")
	}
	round, _ := strconv.Atoi(os.Getenv(killChildRound))
	seed, _ := strconv.ParseInt(os.Getenv(killChildSeed), 10, 64)
	rng := rand.New(rand.NewSource(seed))
	fail := func(err error) {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	db, err := Open(dir, killOptions())
	if err != nil {
		fail(err)
	}
	fmt.Println("ready")
	for step := 1; ; step++ {
		key := killKey(round, step)
		keys := []string{key}
		switch r := rng.Intn(10); {
		case r < 6:
			err = db.Put([]byte(key), []byte(killValue(key)), Sync)
		case r < 8:
			// Two keys in one batch.
			k2 := key + "b"
			keys = append(keys, k2)
			b := db.NewBatch()
			b.Put([]byte(key), []byte(killValue(key)))
			b.Put([]byte(k2), []byte(killValue(k2)))
			err = db.Apply(b, Sync)
		case r < 9 && round > 0:
			// Delete a key an earlier round wrote (perhaps deleted
			// already), announced before the write.
			old := killKey(rng.Intn(round), 1+rng.Intn(step))
			fmt.Printf("intent %d del %s\n", step, old)
			b := db.NewBatch()
			b.Delete([]byte(old))
			b.Put([]byte(key), []byte(killValue(key)))
			err = db.Apply(b, Sync)
		default:
			// Unacknowledged NoSync noise first.
			err = db.Put([]byte(fmt.Sprintf("noise-%d", rng.Intn(1000))), []byte(strings.Repeat("n", rng.Intn(2000))), NoSync)
			if err == nil {
				err = db.Put([]byte(key), []byte(killValue(key)), Sync)
			}
		}
		if err != nil {
			fail(err)
		}
		// os.Stdout is unbuffered: once Println returns, the line is in
		// the pipe and survives the kill.
		fmt.Println("ack", step, strings.Join(keys, " "))
	}
}
