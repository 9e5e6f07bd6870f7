package main

import "strings"

// COMMAND, COMMAND COUNT/INFO/DOCS/LIST, in Redis 7's shapes.

func cmdCommand(s *Server, r *reply, args [][]byte) {
	if len(args) == 1 {
		names := sortedCommands()
		r.array(len(names))
		for _, n := range names {
			commandInfo(r, commands[n])
		}
		return
	}
	if !subcommandOK(r, "command", commandArity, args) {
		return
	}
	switch sub := lower(args[1]); {
	case sub == "count":
		r.int(int64(len(commands)))
	case sub == "list":
		names := sortedCommands()
		r.array(len(names))
		for _, n := range names {
			r.bulkString(n)
		}
	case sub == "info":
		names := args[2:]
		if len(names) == 0 {
			cmdCommand(s, r, args[:1])
			return
		}
		r.array(len(names))
		for _, a := range names {
			if c := commands[lower(a)]; c != nil {
				commandInfo(r, c)
			} else {
				r.WriteNullArray()
			}
		}
	case sub == "docs":
		commandDocs(r, args[2:])
	case sub == "help":
		r.array(5)
		r.status("COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
		r.status("(no subcommand): all commands, COUNT, LIST, INFO [<command-name> ...],")
		r.status("DOCS [<command-name> ...]")
		r.status("(sieve-server's commands only)")
		r.status("HELP")
	}
}

// commandArity is Redis 7's arity of each COMMAND subcommand (LIST's
// FILTERBY is not supported: it lists every command).
var commandArity = map[string]int{"count": 2, "list": 2, "info": -2, "docs": -2, "help": 2}

// commandKeys returns a command's first key, last key and step.
func commandKeys(name string) (int64, int64, int64) {
	switch name {
	case "mset", "msetnx":
		return 1, -1, 2
	case "del", "unlink", "exists", "mget", "watch", "pfcount", "pfmerge":
		return 1, -1, 1
	case "rename", "renamenx", "copy", "lcs":
		return 1, 2, 1
	}
	if g := commandGroup(name); g == "server" || g == "connection" || name == "randomkey" || name == "scan" || name == "keys" {
		return 0, 0, 0
	}
	return 1, 1, 1
}

// commandGroup is the group COMMAND DOCS shows.
func commandGroup(name string) string {
	switch {
	case strings.Contains(name, "."):
		return "module"
	case strings.HasPrefix(name, "pf"):
		return "hyperloglog"
	}
	switch name {
	case "ping", "echo", "hello", "auth", "select", "client", "quit":
		return "connection"
	case "multi", "exec", "discard", "watch", "unwatch":
		return "transactions"
	case "del", "unlink", "exists", "type", "rename", "renamenx", "copy", "scan", "keys", "randomkey",
		"ttl", "pttl", "persist", "expire", "pexpire", "expireat", "pexpireat":
		return "generic"
	case "command", "info", "config", "debug", "shutdown", "save", "bgsave", "lastsave", "time",
		"role", "monitor", "dbsize", "flushall", "flushdb", "function", "readonly", "wait":
		return "server"
	}
	return "string"
}

// commandInfo writes a command's COMMAND INFO entry (Redis 7: ten fields).
func commandInfo(r *reply, c *command) {
	first, last, step := commandKeys(c.name)
	r.array(10)
	r.bulkString(c.name)
	r.int(int64(c.arity))
	if c.write {
		r.array(1)
		r.status("write")
	} else {
		r.array(1)
		r.status("readonly")
	}
	r.int(first)
	r.int(last)
	r.int(step)
	r.array(0) // ACL categories
	r.array(0) // tips
	r.array(0) // key specs
	r.array(0) // subcommands
}

// commandDocs is COMMAND DOCS [name ...]: for each command sieve has (an
// unknown name is left out, as Redis does), a summary, since and group;
// a RedisBloom command also names its module.
func commandDocs(r *reply, names [][]byte) {
	var list []*command
	if len(names) == 0 {
		for _, n := range sortedCommands() {
			list = append(list, commands[n])
		}
	}
	for _, a := range names {
		if c := commands[lower(a)]; c != nil {
			list = append(list, c)
		}
	}
	r.array(2 * len(list))
	for _, c := range list {
		r.bulkString(c.name)
		g := commandGroup(c.name)
		n := 6
		if g == "module" {
			n = 8
		}
		r.array(n)
		r.bulkString("summary")
		r.bulkString(strings.ToUpper(c.name) + " as sieve-server answers it (see cmd/sieve-server/README.md)")
		r.bulkString("since")
		r.bulkString("1.0.0")
		r.bulkString("group")
		r.bulkString(g)
		if g == "module" {
			r.bulkString("module")
			r.bulkString("bf")
		}
	}
}
