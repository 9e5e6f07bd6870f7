package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/sievedb/sieve"
)

// repairCmd rebuilds the manifest of a damaged database (sieve.Repair)
// and prints what it kept and what it set aside in DIR/lost/.
func repairCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("repair", "DIR", stderr)
	mode := fs.String("wal-recovery", "skip-damaged", "what to do at a damaged WAL record: skip-damaged (drop it, replay the rest) or point-in-time (stop there, keep the writes before it)")
	dir, err := parse(fs, args)
	if err != nil {
		return err
	}
	o := &sieve.Options{Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	switch *mode {
	case "skip-damaged":
		o.WALRecovery = sieve.WALRecoverySkipDamaged
	case "point-in-time":
		o.WALRecovery = sieve.WALRecoveryPointInTime
	default:
		return usagef("repair: -wal-recovery: want skip-damaged or point-in-time, got %q", *mode)
	}
	rep, err := sieve.Repair(dir, o)
	if rep != nil {
		fmt.Fprint(stdout, rep.String())
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "repaired %s: run \"sieve check %s\" to verify it\n", dir, dir)
	return nil
}
