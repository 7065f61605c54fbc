package io.coord.bench.perf;

import io.coord.bench.Ensemble;
import io.coord.bench.Progress;
import io.coord.bench.Safety;
import io.coord.bench.ServerCounters;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.curator.framework.CuratorFramework;

/** What every scenario shares: the ensemble and its sessions, the plan, the safety checks and the run's notes. */
public final class BenchContext {
    private final Ensemble ensemble;
    private final ServerCounters counters;
    private final Safety safety;
    private final Progress progress;
    private final Plan plan;
    private final String root;
    private final List<CuratorFramework> sessions = new ArrayList<>();
    private final List<String> notes = new CopyOnWriteArrayList<>();

    public BenchContext(Ensemble ensemble, Safety safety, Progress progress, Plan plan) {
        this.ensemble = ensemble;
        this.counters = new ServerCounters(ensemble.servers());
        this.safety = safety;
        this.progress = progress;
        this.plan = plan;
        // A fresh root per run, so an external ensemble's leftovers from an earlier run never mix in.
        this.root = "/coord-bench/run-" + Long.toHexString(System.currentTimeMillis());
    }

    /**
     * The first {@code n} of a pool of sessions that lives for the whole run. coord and Curator take turns on the
     * same sessions, so neither side pays for connecting and both see the same spread over the servers. Their
     * sessions are long ({@link Ensemble#LONG_SESSION_TIMEOUT}), so that a session waiting its turn does not ping:
     * the servers would count its pings as requests of whichever side waits longer.
     */
    public List<CuratorFramework> sessions(int n) throws InterruptedException {
        while (sessions.size() < n) {
            sessions.add(ensemble.newClient(Ensemble.LONG_SESSION_TIMEOUT));
        }
        return List.copyOf(sessions.subList(0, n));
    }

    /** A session of its own, for work whose end closes it; the ensemble closes it at the end if nobody did. */
    public CuratorFramework newClient() throws InterruptedException {
        return ensemble.newClient();
    }

    String root() {
        return root;
    }

    /** A path under this run's root, e.g. {@code path("s2", "coord", "8")}. */
    public String path(String... parts) {
        return root + "/" + String.join("-", parts);
    }

    public ServerCounters counters() {
        return counters;
    }

    public Safety safety() {
        return safety;
    }

    public Plan plan() {
        return plan;
    }

    public void progress(String text) {
        progress.step(text);
    }

    /** Something a reader must know to read the figures right; printed under the table. */
    public void note(String text) {
        notes.add(text);
    }

    public List<String> notes() {
        return List.copyOf(notes);
    }
}
