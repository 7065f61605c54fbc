package io.coord.bench.perf;

import io.coord.bench.Safety;
import io.coord.core.Lease;
import io.coord.election.LeaderLatch;
import io.coord.election.LeaderListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;

/**
 * Scenario 7: three candidates on three sessions; the leader closes its latch, and the clock stops when the next
 * one's {@code isLeader} fires. The closed candidate rejoins at the back, so every failover sees the same queue.
 * coord's next candidate is granted by the delete notification; Curator's LeaderLatch reads the children first.
 */
final class Failover implements Scenario {
    private static final int CANDIDATES = 3;
    private static final Duration ELECTION_TIMEOUT = Duration.ofSeconds(30);

    private record Elected(int candidate, long atNanos) {}

    /** One side's candidate: joins on start, and resigns by closing. */
    private interface Candidate {
        void start() throws Exception;

        void resign() throws Exception;
    }

    /** Builds candidate {@code index} on {@code session}, reporting each election to {@code events}. */
    @FunctionalInterface
    private interface Factory {
        Candidate create(int index, CuratorFramework session, BlockingQueue<Elected> events);
    }

    @Override
    public String id() {
        return "7";
    }

    @Override
    public String title() {
        return "leader failover: leader closes until next isLeader (vs LeaderLatch)";
    }

    @Override
    public List<Row> run(BenchContext ctx) throws Exception {
        List<CuratorFramework> sessions = ctx.sessions(CANDIDATES);
        Safety.Guard coordGuard = ctx.safety().guard("7 coord LeaderLatch", 1);
        Safety.Guard curatorGuard = ctx.safety().guard("7 Curator LeaderLatch", 1);
        String coordPath = ctx.path("s7", "coord");
        String curatorPath = ctx.path("s7", "curator");
        Factory coordFactory = (i, session, events) -> coordCandidate(session, coordPath, i, coordGuard, events);
        Factory curatorFactory =
                (i, session, events) -> curatorCandidate(session, curatorPath, i, curatorGuard, events);
        Sample coord = new Sample("coord LeaderLatch");
        Sample curator = new Sample("Curator LeaderLatch");
        Rounds.run(
                ctx,
                "7 leader failover",
                ctx.plan().rounds(),
                List.of(
                        () -> failovers(ctx, sessions, coordFactory, coord),
                        () -> failovers(ctx, sessions, curatorFactory, curator)));
        return List.of(new Row(id(), title(), CANDIDATES + " candidates", coord.figures(), List.of(curator.figures())));
    }

    private static void failovers(BenchContext ctx, List<CuratorFramework> sessions, Factory factory, Sample sample)
            throws Exception {
        BlockingQueue<Elected> events = new LinkedBlockingQueue<>();
        List<Candidate> candidates = new ArrayList<>();
        for (int i = 0; i < sessions.size(); i++) {
            candidates.add(factory.create(i, sessions.get(i), events));
            candidates.get(i).start();
        }
        try {
            int leader = next(events).candidate();
            int failovers = ctx.plan().failovers();
            Sample.Window window = sample.open(ctx.counters());
            for (int f = 0; f < failovers; f++) {
                long resignedAt = System.nanoTime();
                candidates.get(leader).resign();
                Elected elected = next(events);
                sample.record(elected.atNanos() - resignedAt);
                ctx.safety()
                        .check(elected.candidate() != leader, "7: candidate " + leader + " elected after resigning");
                // The old leader rejoins at the back of the queue, so the next failover starts from the same shape.
                candidates.set(leader, factory.create(leader, sessions.get(leader), events));
                candidates.get(leader).start();
                leader = elected.candidate();
            }
            window.close(failovers);
        } finally {
            for (Candidate c : candidates) {
                c.resign();
            }
        }
    }

    private static Elected next(BlockingQueue<Elected> events) throws InterruptedException, TimeoutException {
        Elected e = events.poll(ELECTION_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        if (e == null) {
            throw new TimeoutException("no leader elected within " + ELECTION_TIMEOUT);
        }
        return e;
    }

    private static Candidate coordCandidate(
            CuratorFramework session, String path, int index, Safety.Guard guard, BlockingQueue<Elected> events) {
        LeaderLatch latch = new LeaderLatch(session, path, "candidate-" + index);
        AtomicBoolean leading = new AtomicBoolean();
        latch.addListener(
                new LeaderListener() {
                    @Override
                    public void isLeader(Lease term) {
                        long at = System.nanoTime();
                        if (leading.compareAndSet(false, true)) {
                            guard.enter(term.fencingToken()); // the epoch must rise from one leader to the next
                        }
                        events.add(new Elected(index, at));
                    }

                    @Override
                    public void notLeader() {
                        if (leading.compareAndSet(true, false)) {
                            guard.exit();
                        }
                    }
                },
                Runnable::run); // timestamps taken on the notifying thread, as Curator's listener below is
        return new Candidate() {
            @Override
            public void start() {
                latch.start();
            }

            @Override
            public void resign() {
                if (leading.compareAndSet(true, false)) {
                    guard.exit(); // before the close, whose notLeader may come after the next leader's isLeader
                }
                latch.close();
            }
        };
    }

    private static Candidate curatorCandidate(
            CuratorFramework session, String path, int index, Safety.Guard guard, BlockingQueue<Elected> events) {
        org.apache.curator.framework.recipes.leader.LeaderLatch latch =
                new org.apache.curator.framework.recipes.leader.LeaderLatch(session, path, "candidate-" + index);
        AtomicBoolean leading = new AtomicBoolean();
        AtomicBoolean started = new AtomicBoolean();
        latch.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {
                long at = System.nanoTime();
                if (leading.compareAndSet(false, true)) {
                    guard.enter();
                }
                events.add(new Elected(index, at));
            }

            @Override
            public void notLeader() {
                if (leading.compareAndSet(true, false)) {
                    guard.exit();
                }
            }
        });
        return new Candidate() {
            @Override
            public void start() throws Exception {
                latch.start();
                started.set(true);
            }

            @Override
            public void resign() throws Exception {
                if (leading.compareAndSet(true, false)) {
                    guard.exit();
                }
                if (started.compareAndSet(true, false)) {
                    latch.close(); // Curator's close throws on a latch that is already closed
                }
            }
        };
    }
}
