package io.coord.it;

import static org.awaitility.Awaitility.await;

import io.coord.core.CoordinationException;
import io.coord.queue.Claim;
import io.coord.queue.DistributedQueue;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.apache.curator.framework.CuratorFramework;
import org.awaitility.core.ConditionTimeoutException;

/**
 * One consumer of an at-least-once run: it claims items until every one is acked, and now and then lets go of the
 * item it holds, or dies holding it, in one of four ways. Every delivery and every answer of {@code ack()} goes to
 * the {@link QueueClaimLedger}.
 */
final class QueueClaimer {
    /** What a claimer does with a claimed item. */
    enum Fate {
        ACK,
        RELEASE,
        CLOSE_CLIENT,
        EXPIRE_ON_SERVERS,
        EXPIRE_ON_CLIENT
    }

    private static final List<Fate> VICTIM_FATES =
            List.of(Fate.CLOSE_CLIENT, Fate.EXPIRE_ON_SERVERS, Fate.EXPIRE_ON_CLIENT, Fate.RELEASE);
    private static final Duration CLAIM_WAIT = Duration.ofMillis(500);

    /** Makes a connected client that the fixture closes, with its connection states on the timeline. */
    interface Clients {
        CuratorFramework newClient(String label) throws InterruptedException;
    }

    private final String name;
    private final ClusterFixture cluster;
    private final Clients clients;
    private final Function<CuratorFramework, DistributedQueue<String>> queues;
    private final QueueClaimLedger ledger;
    private final Timeline timeline;
    private final int[] fates = new int[Fate.values().length];

    QueueClaimer(
            String name,
            ClusterFixture cluster,
            Clients clients,
            Function<CuratorFramework, DistributedQueue<String>> queues,
            QueueClaimLedger ledger,
            Timeline timeline) {
        this.name = name;
        this.cluster = cluster;
        this.clients = clients;
        this.queues = queues;
        this.ledger = ledger;
        this.timeline = timeline;
    }

    /**
     * Every {@code victimEvery}-th delivery overall, up to {@code maxVictims}, is given up instead of acked; the four
     * ways take turns. Everything else is acked.
     */
    static Fate fate(int delivery, int victimEvery, int maxVictims) {
        int victim = delivery / victimEvery;
        if (delivery % victimEvery != victimEvery / 2 || victim >= maxVictims) {
            return Fate.ACK;
        }
        return VICTIM_FATES.get(victim % VICTIM_FATES.size());
    }

    static List<Fate> victimFates() {
        return VICTIM_FATES;
    }

    /** "ACK=200, RELEASE=4, ..." for counts indexed by {@link Fate#ordinal()}. */
    static String describe(int[] fates) {
        StringBuilder counts = new StringBuilder();
        for (Fate fate : Fate.values()) {
            counts.append(counts.length() == 0 ? "" : ", ")
                    .append(fate)
                    .append('=')
                    .append(fates[fate.ordinal()]);
        }
        return counts.toString();
    }

    /** Claims until the ledger has every item acked or the deadline passes. Returns how often each fate came. */
    int[] run(AtomicInteger deliveries, int victimEvery, int maxVictims, long deadlineNanos) throws Exception {
        CuratorFramework client = clients.newClient(name);
        DistributedQueue<String> queue = queues.apply(client);
        while (!ledger.allAcked() && System.nanoTime() - deadlineNanos < 0) {
            Claim<String> claim;
            try {
                claim = queue.claim(CLAIM_WAIT).orElse(null);
            } catch (CoordinationException e) {
                ledger.failed(name, e);
                continue;
            }
            if (claim == null) {
                continue;
            }
            try {
                String item = claim.item();
                ledger.delivered(name, item);
                Fate fate = fate(deliveries.incrementAndGet(), victimEvery, maxVictims);
                fates[fate.ordinal()]++;
                switch (fate) {
                    case ACK -> ledger.acked(name, item, claim.ack());
                    case RELEASE -> {
                        ledger.givingUp(name, item, "closes the claim without ack");
                        claim.close();
                    }
                    case CLOSE_CLIENT -> {
                        ledger.givingUp(name, item, "closes its client");
                        client.close();
                        ledger.ackedAfterDeath(name, item, claim.ack(), "its client was closed");
                        client = clients.newClient(name);
                        queue = queues.apply(client);
                    }
                    case EXPIRE_ON_SERVERS -> {
                        ledger.givingUp(name, item, "has its session expired on the servers");
                        long old = cluster.expireSession(client);
                        awaitNewSession(client, old);
                        ledger.ackedAfterDeath(name, item, claim.ack(), "its session expired on the servers");
                    }
                    case EXPIRE_ON_CLIENT -> {
                        ledger.givingUp(name, item, "is told its session expired");
                        long old = ClusterFixture.sessionId(client);
                        cluster.expireSessionOnClient(client);
                        awaitNewSession(client, old);
                        ledger.ackedAfterDeath(name, item, claim.ack(), "it was told its session expired");
                    }
                }
            } finally {
                claim.close(); // a no-op after an ack, or once the claim died
            }
        }
        return fates.clone();
    }

    private void awaitNewSession(CuratorFramework client, long old) {
        try {
            await(name + " on a new session").atMost(Duration.ofSeconds(20)).until(() -> {
                long now = ClusterFixture.sessionId(client);
                return now != 0 && now != old && client.getZookeeperClient().isConnected();
            });
        } catch (ConditionTimeoutException e) {
            // Where the client's own threads stand: a handle that is never replaced shows where Curator waits.
            throw new AssertionError(
                    name + " is still on session 0x" + Long.toHexString(old) + ", or not connected; its threads:\n"
                            + threadsOf(name),
                    e);
        }
        timeline.add(name + " is on session 0x" + Long.toHexString(ClusterFixture.sessionId(client)));
    }

    /** The stacks of the threads whose names start with {@code prefix} (a handle's send and event threads). */
    private static String threadsOf(String prefix) {
        StringBuilder dump = new StringBuilder();
        Thread.getAllStackTraces().forEach((thread, stack) -> {
            if (thread.getName().startsWith(prefix)) {
                dump.append(thread.getName())
                        .append(' ')
                        .append(thread.getState())
                        .append('\n');
                for (StackTraceElement frame : stack) {
                    dump.append("    at ").append(frame).append('\n');
                }
            }
        });
        return dump.toString();
    }
}
