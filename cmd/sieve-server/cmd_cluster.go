package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/sievedb/sieve/replica"
)

// Redis Cluster's surface with one shard (cluster mode): the leader is
// the master of all 16384 slots, the followers its replicas.

func init() {
	register(
		&command{name: "cluster", arity: -2, fn: cmdCluster},
		&command{name: "readonly", arity: 1, fn: cmdReadonly},
		&command{name: "readwrite", arity: 1, fn: cmdReadwrite},
		&command{name: "asking", arity: 1, fn: func(s *Server, r *reply, a [][]byte) { r.ok() }},
		&command{name: "sieve.raft", arity: -2, fn: cmdSieveRaft},
	)
}

// keySlot is Redis Cluster's slot of key: CRC16 (XMODEM) of the key, or
// of its hash tag (the bytes between the first '{' and the next '}', if
// not empty), mod 16384.
func keySlot(key []byte) int {
	if i := strings.IndexByte(string(key), '{'); i >= 0 {
		if j := strings.IndexByte(string(key[i+1:]), '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for _, b := range key {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) & 16383
}

// nodeID is the Redis node ID shown for raft ID id: 40 hex digits (the
// SHA-1 of the raft ID), as Redis's are.
func nodeID(id string) string {
	h := sha1.Sum([]byte(id))
	return hex.EncodeToString(h[:])
}

func cmdReadonly(s *Server, r *reply, _ [][]byte) {
	if s.cluster == nil {
		r.ok() // as before: every read is local anyway
		return
	}
	r.cl.readonly = true
	r.ok()
}

func cmdReadwrite(s *Server, r *reply, _ [][]byte) {
	r.cl.readonly = false
	r.ok()
}

// member is a node of the raft configuration as the cluster commands show
// it.
type member struct {
	clusterNode
	leader bool
}

// members returns the raft configuration's nodes, the leader first, and
// whether a leader is known.
func (s *Server) members() ([]member, bool) {
	cs := s.cluster
	servers, _ := cs.rep.Servers()
	lid, _ := cs.rep.Leader()
	var out []member
	hasLeader := false
	for _, p := range servers {
		n, ok := cs.node(p.ID)
		if !ok {
			n = clusterNode{id: p.ID, raftAddr: p.Addr}
		}
		m := member{clusterNode: n, leader: p.ID == lid}
		if m.leader {
			hasLeader = true
			out = append([]member{m}, out...)
		} else {
			out = append(out, m)
		}
	}
	return out, hasLeader
}

func splitAddr(addr string) (string, int) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	n, _ := strconv.Atoi(p)
	return h, n
}

func cmdCluster(s *Server, r *reply, args [][]byte) {
	if s.cluster == nil {
		r.err("ERR This instance has cluster support disabled")
		return
	}
	switch sub := lower(args[1]); {
	case sub == "info":
		r.bulkString(s.clusterInfo())
	case sub == "myid":
		r.bulkString(nodeID(s.cluster.self.id))
	case sub == "slots":
		s.clusterSlots(r)
	case sub == "shards":
		s.clusterShards(r)
	case sub == "nodes":
		r.bulkString(s.clusterNodes())
	case sub == "keyslot" && len(args) == 3:
		r.int(int64(keySlot(args[2])))
	default:
		r.err(fmt.Sprintf("ERR unknown subcommand '%s'. Try CLUSTER HELP.", clip(args[1], 128)))
	}
}

func (s *Server) clusterInfo() string {
	ms, ok := s.members()
	state := "ok"
	if !ok {
		state = "fail"
	}
	term := s.cluster.rep.Raft().CurrentTerm()
	lines := []string{
		"cluster_enabled:1", "cluster_state:" + state, "cluster_slots_assigned:16384",
		"cluster_slots_ok:16384", "cluster_slots_pfail:0", "cluster_slots_fail:0",
		fmt.Sprintf("cluster_known_nodes:%d", len(ms)), "cluster_size:1",
		fmt.Sprintf("cluster_current_epoch:%d", term), fmt.Sprintf("cluster_my_epoch:%d", term),
	}
	return strings.Join(lines, "\r\n") + "\r\n"
}

// clusterSlots answers CLUSTER SLOTS: one range, the leader then the
// followers (empty while no leader is known).
func (s *Server) clusterSlots(r *reply) {
	ms, ok := s.members()
	if !ok {
		r.array(0)
		return
	}
	r.array(1)
	r.array(2 + len(ms))
	r.int(0)
	r.int(16383)
	for _, m := range ms {
		host, port := splitAddr(m.addr)
		r.array(3)
		r.bulkString(host)
		r.int(int64(port))
		r.bulkString(nodeID(m.id))
	}
}

func (s *Server) clusterShards(r *reply) {
	ms, _ := s.members()
	applied := int64(s.cluster.rep.AppliedIndex())
	r.array(1)
	r.array(4)
	r.bulkString("slots")
	r.array(2)
	r.int(0)
	r.int(16383)
	r.bulkString("nodes")
	r.array(len(ms))
	for _, m := range ms {
		host, port := splitAddr(m.addr)
		role := "replica"
		if m.leader {
			role = "master"
		}
		r.array(14)
		r.bulkString("id")
		r.bulkString(nodeID(m.id))
		r.bulkString("port")
		r.int(int64(port))
		r.bulkString("ip")
		r.bulkString(host)
		r.bulkString("endpoint")
		r.bulkString(host)
		r.bulkString("role")
		r.bulkString(role)
		r.bulkString("replication-offset")
		r.int(applied)
		r.bulkString("health")
		r.bulkString("online")
	}
}

// clusterNodes answers CLUSTER NODES in Redis's format.
func (s *Server) clusterNodes() string {
	ms, ok := s.members()
	leaderID := "-"
	if ok {
		leaderID = nodeID(ms[0].id)
	}
	term := s.cluster.rep.Raft().CurrentTerm()
	var b strings.Builder
	for _, m := range ms {
		_, rport := splitAddr(m.raftAddr)
		flags, master, slots := "slave", leaderID, ""
		if m.leader {
			flags, master, slots = "master", "-", " 0-16383"
		}
		if m.id == s.cluster.self.id {
			flags = "myself," + flags
		}
		fmt.Fprintf(&b, "%s %s@%d %s %s 0 0 %d connected%s\n", nodeID(m.id), m.addr, rport, flags, master, term, slots)
	}
	return b.String()
}

// cmdSieveRaft is SIEVE.RAFT ADD id host:port@raftport, REMOVE id and
// SERVERS: membership, on the leader; SNAPSHOT takes a raft snapshot of
// this node now (raft then truncates its log to the trailing entries).
func cmdSieveRaft(s *Server, r *reply, args [][]byte) {
	cs := s.cluster
	if cs == nil {
		r.err("ERR not in cluster mode")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	switch sub := lower(args[1]); {
	case sub == "servers" && len(args) == 2:
		ms, _ := s.members()
		r.array(len(ms))
		for _, m := range ms {
			r.bulkString(fmt.Sprintf("%s %s %s leader=%v", m.id, m.addr, m.raftAddr, m.leader))
		}
	case sub == "add" && len(args) == 4:
		n, err := parseNode(string(args[2]) + "=" + string(args[3]))
		if err == nil {
			err = cs.applyNode(ctx, n.id, args[3])
		}
		if err == nil {
			err = cs.rep.AddVoter(ctx, n.id, n.raftAddr)
		}
		s.raftReply(r, err)
	case sub == "remove" && len(args) == 3:
		err := cs.rep.RemoveServer(ctx, string(args[2]))
		if err == nil {
			err = cs.applyNode(ctx, string(args[2]), nil)
		}
		s.raftReply(r, err)
	case sub == "snapshot" && len(args) == 2:
		s.raftReply(r, cs.rep.Snapshot())
	default:
		r.err("ERR usage: SIEVE.RAFT ADD id host:port@raftport | REMOVE id | SERVERS | SNAPSHOT")
	}
}

// applyNode records (or, with a nil addr, forgets) a node's addresses in
// the replicated family.
func (c *clusterState) applyNode(ctx context.Context, id string, addr []byte) error {
	op := replica.Op{Kind: replica.OpPut, Family: clusterFamily, Key: []byte(id), Value: addr}
	if addr == nil {
		op.Kind = replica.OpDelete
	}
	res, err := c.rep.Apply(ctx, &replica.Command{Ops: []replica.Op{op}})
	if err == nil && res.Err != nil {
		err = res.Err
	}
	return err
}

func (s *Server) raftReply(r *reply, err error) {
	if err != nil {
		r.err("ERR " + err.Error())
		return
	}
	r.ok()
}

// clusterRole answers ROLE in cluster mode.
func (s *Server) clusterRole(r *reply) {
	cs := s.cluster
	applied := int64(cs.rep.AppliedIndex())
	if cs.rep.IsLeader() {
		ms, _ := s.members()
		r.array(3)
		r.bulkString("master")
		r.int(applied)
		r.array(len(ms) - 1)
		for _, m := range ms[1:] {
			host, port := splitAddr(m.addr)
			r.array(3)
			r.bulkString(host)
			r.bulkString(strconv.Itoa(port))
			r.bulkString(strconv.FormatInt(applied, 10))
		}
		return
	}
	host, port := splitAddr(cs.leaderAddr())
	state := "connected"
	if host == "" {
		state = "connect"
	}
	r.array(5)
	r.bulkString("slave")
	r.bulkString(host)
	r.int(int64(port))
	r.bulkString(state)
	r.int(applied)
}

// infoReplication is INFO's replication section.
func (s *Server) infoReplication() []string {
	cs := s.cluster
	if cs == nil {
		return []string{"role:master", "connected_slaves:0", "master_failover_state:no-failover",
			"master_replid:0000000000000000000000000000000000000000", "master_repl_offset:0"}
	}
	lid, _ := cs.rep.Leader()
	applied := cs.rep.AppliedIndex()
	out := []string{}
	if cs.rep.IsLeader() {
		ms, _ := s.members()
		out = append(out, "role:master", fmt.Sprintf("connected_slaves:%d", max(len(ms)-1, 0)))
	} else {
		host, port := splitAddr(cs.leaderAddr())
		status := "up"
		if host == "" {
			status = "down"
		}
		out = append(out, "role:slave", "master_host:"+host, fmt.Sprintf("master_port:%d", port), "master_link_status:"+status)
	}
	return append(out, "master_repl_offset:"+strconv.FormatUint(applied, 10),
		"raft_id:"+cs.self.id, "raft_leader_id:"+lid, "raft_state:"+cs.rep.Raft().State().String(),
		fmt.Sprintf("raft_term:%d", cs.rep.Raft().CurrentTerm()), fmt.Sprintf("raft_applied_index:%d", applied),
		"raft_last_snapshot_index:"+cs.rep.Raft().Stats()["last_snapshot_index"],
		fmt.Sprintf("raft_snapshot_restores:%d", cs.restores.Load()))
}
