package io.coord.bench.demo;

import io.coord.core.Lease;
import io.coord.election.LeaderLatch;
import io.coord.election.LeaderListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;

/**
 * Three nodes elect a leader with LeaderLatch. On the embedded ensemble each node's session talks to one server only,
 * so killing the leader's server takes its session down for good: after the session timeout the others elect a new
 * leader, whose epoch (its term's fencing token) is higher. On an external ensemble the leader's client is closed
 * instead.
 */
final class FailoverDemo implements DemoScenario {
    private static final int NODES = 3;
    private static final Duration ELECTION_PATIENCE = Duration.ofSeconds(40);

    private record Elected(int node, long epoch, long atNanos) {}

    @Override
    public String title() {
        return "5. Leader failover: the leader's server dies, a new leader takes over with a higher epoch";
    }

    @Override
    public Verdict run(DemoContext ctx) throws Exception {
        boolean embedded = ctx.ensemble().isEmbedded();
        List<String> servers = ctx.ensemble().clientAddresses();
        String path = ctx.path("election");
        BlockingQueue<Elected> elected = new LinkedBlockingQueue<>();
        AtomicBoolean narrating = new AtomicBoolean(true); // not while the latches close after the verdict
        List<CuratorFramework> clients = new ArrayList<>();
        List<LeaderLatch> latches = new ArrayList<>();
        try {
            for (int i = 0; i < NODES; i++) {
                int node = i + 1;
                // Pinned to one server each on the embedded ensemble, so losing that server means losing the session.
                CuratorFramework client = embedded
                        ? ctx.ensemble().newClient(servers.get(i % servers.size()))
                        : ctx.ensemble().newClient();
                LeaderLatch latch = new LeaderLatch(client, path, "node-" + node);
                latch.addListener(
                        new LeaderListener() {
                            @Override
                            public void isLeader(Lease term) {
                                long at = System.nanoTime();
                                if (narrating.get()) {
                                    ctx.say("node-%d leads, epoch 0x%x", node, term.fencingToken());
                                }
                                elected.add(new Elected(node, term.fencingToken(), at));
                            }

                            @Override
                            public void notLeader() {
                                if (narrating.get()) {
                                    ctx.say("node-%d stepped down", node);
                                }
                            }
                        },
                        Runnable::run);
                clients.add(client);
                latches.add(latch);
            }
            latches.forEach(LeaderLatch::start);
            Elected first = next(elected);
            if (first == null) {
                return Verdict.of("failover", false, "no leader within " + ELECTION_PATIENCE.toSeconds() + " s");
            }
            CuratorFramework leaderClient = clients.get(first.node() - 1);
            long killedAt = System.nanoTime();
            if (embedded) {
                String server = ctx.ensemble().killServerOf(leaderClient);
                ctx.say("killing %s, the only server node-%d's session can reach", server, first.node());
            } else {
                ctx.say("closing node-%d's session (an external ensemble has no server to kill)", first.node());
                leaderClient.close();
            }
            Elected successor;
            do {
                successor = next(elected);
            } while (successor != null && successor.node() == first.node()); // the old leader's own re-grant, if any
            if (successor == null) {
                return Verdict.of("failover", false, "no new leader within " + ELECTION_PATIENCE.toSeconds() + " s");
            }
            boolean oldStillLeads = latches.get(first.node() - 1).hasLeadership();
            boolean pass = successor.epoch() > first.epoch() && !oldStillLeads;
            long tookMillis = (successor.atNanos() - killedAt) / 1_000_000;
            String summary = String.format(
                    Locale.ROOT,
                    "node-%d took over from node-%d after %s; epoch 0x%x > 0x%x; the old leader %s",
                    successor.node(),
                    first.node(),
                    tookMillis < 1_000 ? tookMillis + " ms" : String.format(Locale.ROOT, "%.1f s", tookMillis / 1e3),
                    successor.epoch(),
                    first.epoch(),
                    oldStillLeads ? "STILL claims leadership" : "no longer claims leadership");
            return Verdict.of("failover", pass, summary);
        } finally {
            narrating.set(false);
            latches.forEach(LeaderLatch::close);
        }
    }

    private static Elected next(BlockingQueue<Elected> elected) throws InterruptedException {
        return elected.poll(ELECTION_PATIENCE.toSeconds(), TimeUnit.SECONDS);
    }
}
