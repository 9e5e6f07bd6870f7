// Package logflag builds the slog.Logger of the commands' -log-format and
// -log-level flags (sieve-server, lsmbench), which they give the engine as
// Options.Logger.
package logflag

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// FormatUsage and LevelUsage are the flags' help texts.
const (
	FormatUsage = "log format: text or json (one record a line)"
	LevelUsage  = "least level logged: debug, info, warn or error (off: none)"
)

// New returns a logger writing records of level at least level to w, as
// text (slog.TextHandler) or json (slog.JSONHandler). Level "off" logs
// nothing.
func New(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	switch strings.ToLower(level) {
	case "off":
		w = io.Discard
	case "debug", "info", "warn", "error":
		if err := lv.UnmarshalText([]byte(level)); err != nil {
			return nil, fmt.Errorf("-log-level %q: %v", level, err)
		}
	default:
		return nil, fmt.Errorf("-log-level %q: want debug, info, warn, error or off", level)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("-log-format %q: want text or json", format)
}
