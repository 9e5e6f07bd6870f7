package sieve

import (
	"fmt"
	"sync/atomic"

	"github.com/sievedb/sieve/filter"
	"github.com/sievedb/sieve/internal/lockrank"
	"github.com/sievedb/sieve/internal/manifest"
)

// cfState is the runtime state of one column family.
type cfState struct {
	id   uint32
	name string
	// recordedMerger is the merger name the manifest records ("" = none).
	recordedMerger string
	// merger is the merger supplied in this process (nil = none).
	merger       Merger
	filterPolicy filter.Policy
	// levelPolicies[l], if non-nil, replaces filterPolicy for tables
	// written into level l.
	levelPolicies []filter.Policy
	// prefix cuts the keys' prefixes for the filters and SeekPrefixGE
	// (Options.Prefix; zero: none).
	prefix prefixFunc
	// dropped is set when the family is dropped; its copies and handles
	// share it.
	dropped *atomic.Bool
}

// policyFor returns the filter policy of the family's tables written into
// level.
func (st *cfState) policyFor(level int) filter.Policy {
	if level < len(st.levelPolicies) && st.levelPolicies[level] != nil {
		return st.levelPolicies[level]
	}
	return st.filterPolicy
}

// cfRegistry maps column family IDs and names to their state.
type cfRegistry struct {
	db *DB
	// createMu (rank CFCreate) serializes creations and merger bindings:
	// each reads the registry, writes the manifest, then updates it.
	createMu lockrank.Mutex
	// mu (rank CFRegistry) guards the maps; states are copied on write,
	// so a reader keeps a *cfState without a lock.
	mu     lockrank.RWMutex
	byID   map[uint32]*cfState
	byName map[string]*cfState
	// nextID is the ID the next new family takes: IDs are never reused
	// (manifest.VersionEdit.NextCFID).
	nextID atomic.Uint32
}

func newCFRegistry(db *DB) *cfRegistry {
	r := &cfRegistry{db: db, byID: map[uint32]*cfState{}, byName: map[string]*cfState{}}
	r.createMu.Init(lockrank.CFCreate)
	r.mu.Init(lockrank.CFRegistry)
	return r
}

// lookupName returns the state of the family called name, or nil.
func (r *cfRegistry) lookupName(name string) *cfState {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byName[name]
}

// create records a new column family in the manifest and registers it in
// the same step that publishes the version holding its (empty) levels.
// REQUIRES: createMu held; name is not registered.
func (r *cfRegistry) create(name string, co ColumnFamilyOptions) (*cfState, error) {
	id := r.nextID.Load()
	r.mu.RLock()
	for existing := range r.byID {
		id = max(id, existing+1)
	}
	r.mu.RUnlock()
	cf := manifest.ColumnFamily{ID: id, Name: name}
	if co.Merger != nil {
		cf.Merger = co.Merger.Name()
	}
	st := &cfState{id: id, name: name, recordedMerger: cf.Merger, merger: co.Merger, filterPolicy: r.db.opts.FilterPolicy,
		levelPolicies: r.db.opts.LevelFilterPolicies, prefix: r.db.prefix(), dropped: new(atomic.Bool)}
	if p := prefixOf(co); p.fn != nil {
		st.prefix = p
	}
	if co.FilterPolicy != nil {
		st.filterPolicy, st.levelPolicies = co.FilterPolicy, nil
	}
	if co.LevelFilterPolicies != nil {
		st.levelPolicies = co.LevelFilterPolicies
	}
	err := r.db.logAndApply(&manifest.VersionEdit{AddedCFs: []manifest.ColumnFamily{cf}}, func() {
		r.mu.Lock()
		r.byID[id], r.byName[name] = st, st
		r.mu.Unlock()
		r.nextID.Store(id + 1)
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// load builds the registry from the manifest and binds the default column
// family's options.
func (r *cfRegistry) load() error {
	for id, cf := range r.db.versions.ColumnFamilies() {
		st := &cfState{id: id, name: cf.Name, recordedMerger: cf.Merger, filterPolicy: r.db.opts.FilterPolicy,
			levelPolicies: r.db.opts.LevelFilterPolicies, prefix: r.db.prefix(), dropped: new(atomic.Bool)}
		r.byID[id] = st
		r.byName[cf.Name] = st
	}
	r.nextID.Store(r.db.versions.NextCFID())
	def := r.byID[manifest.DefaultCFID]
	return r.bind(def, r.db.opts.Merger, r.db.opts.FilterPolicy, r.db.opts.LevelFilterPolicies, r.db.prefix())
}

// bind supplies a merger and filter policy to a column family, recording
// the merger's name in the manifest the first time one is supplied.
func (r *cfRegistry) bind(st *cfState, m Merger, p filter.Policy, levels []filter.Policy, pf prefixFunc) error {
	r.createMu.Lock()
	defer r.createMu.Unlock()
	return r.bindLocked(st, m, p, levels, pf)
}

// bindLocked is bind. States are copied on write: readers hold a *cfState
// without locks. REQUIRES: createMu held.
func (r *cfRegistry) bindLocked(old *cfState, m Merger, p filter.Policy, levels []filter.Policy, pf prefixFunc) error {
	st := *old
	if pf.fn != nil {
		st.prefix = pf
	}
	if p != nil {
		st.filterPolicy, st.levelPolicies = p, nil // a family's own policy: not the DB's per level
	}
	if levels != nil {
		st.levelPolicies = levels
	}
	if m != nil {
		if st.recordedMerger != "" && st.recordedMerger != m.Name() {
			return fmt.Errorf("sieve: column family %q was written with merger %q; %q supplied",
				st.name, st.recordedMerger, m.Name())
		}
		if st.recordedMerger == "" && !r.db.opts.ReadOnly {
			e := &manifest.VersionEdit{SetMergers: []manifest.ColumnFamily{{ID: st.id, Merger: m.Name()}}}
			if err := r.db.logAndApply(e, nil); err != nil {
				return err
			}
			st.recordedMerger = m.Name()
		}
		st.merger = m
	}
	r.mu.Lock()
	r.byID[st.id], r.byName[st.name] = &st, &st
	r.mu.Unlock()
	return nil
}

func (r *cfRegistry) get(id uint32) *cfState {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byID[id]
}

func (r *cfRegistry) known(id uint32) bool { return r.get(id) != nil }

// checkMerge returns an error unless column family id can take merge
// operands now.
func (r *cfRegistry) checkMerge(id uint32) error {
	st := r.get(id)
	if st == nil {
		return fmt.Errorf("sieve: unknown column family %d", id)
	}
	if st.merger == nil {
		if st.recordedMerger != "" {
			return fmt.Errorf("%w: column family %q needs merger %q, which was not supplied",
				ErrNoMerger, st.name, st.recordedMerger)
		}
		return fmt.Errorf("%w: column family %q", ErrNoMerger, st.name)
	}
	return nil
}

// checkBatch validates the column families a batch names.
func (r *cfRegistry) checkBatch(b *Batch) error {
	for _, id := range b.cfs {
		if !r.known(id) {
			return r.unknownCF(id)
		}
	}
	for _, id := range b.mergeCFs {
		if err := r.checkMerge(id); err != nil {
			return err
		}
	}
	return nil
}

// policies lists the filter policies of every column family, for decoding
// tables' filter blocks.
func (r *cfRegistry) policies() []filter.Policy {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []filter.Policy
	for _, st := range r.byID {
		if st.filterPolicy != nil {
			out = append(out, st.filterPolicy)
		}
		for _, p := range st.levelPolicies {
			if p != nil {
				out = append(out, p)
			}
		}
	}
	return out
}
