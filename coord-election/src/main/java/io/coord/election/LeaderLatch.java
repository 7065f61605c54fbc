package io.coord.election;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeasePredicate;
import io.coord.core.Participant;
import io.coord.core.internal.Arguments;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.LeaseEngine;
import io.coord.core.internal.OrderedListeners;
import io.coord.core.internal.SerialExecutor;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executor;
import org.apache.curator.framework.CuratorFramework;

/**
 * Joins an election and stays in it until closed: the participant with the lowest sequence node leads.
 *
 * <p>Nodes are {@code <path>/_c_<uuid>-latch-<seq>} with the participant id as data, the layout of Curator's
 * {@code LeaderLatch}, so the two elect one leader between them on one path.
 *
 * <p>Leadership follows the term's {@link Lease}, as the client's {@code ConnectionStateErrorPolicy} reads it:
 *
 * <ul>
 *   <li>Under Curator's default, {@code StandardConnectionStateErrorPolicy}, a SUSPECT term (connection down) does not
 *       lead: the latch stops leading at once and {@link LeaderListener#notLeader()} fires. If the session survives
 *       and the znode is still ours, the same term is HELD again and {@link LeaderListener#isLeader} fires with it.
 *   <li>Under {@code SessionConnectionStateErrorPolicy} (set with
 *       {@code CuratorFrameworkFactory.builder().connectionStateErrorPolicy(...)}), leadership lasts through SUSPECT:
 *       {@link #hasLeadership()} stays true, {@link #term()} stays present, and no listener hears anything. The
 *       term's lease still reports SUSPECT, so check {@link Lease#state()} or fence writes with
 *       {@link Lease#fencedCheck()} if acting on a possibly dead session matters. When the reconnect confirms the
 *       znode, nothing fires either.
 * </ul>
 *
 * <p>Under either policy, when the term is LOST (session expired, znode gone) {@code notLeader()} fires, the latch
 * queues again with a new node, and a later term always has a larger epoch. Closing the term's lease yourself gives
 * the term up, and the latch queues again at the back.
 *
 * <pre>{@code
 * try (LeaderLatch latch = new LeaderLatch(client, "/election/billing", "node-1")) {
 *     latch.addListener(listener, executor);
 *     latch.start();
 *     latch.await();
 *     runAsLeader(latch.term().orElseThrow().fencingToken());
 * }
 * }</pre>
 */
public final class LeaderLatch implements AutoCloseable {
    static final String PREFIX = "latch-";

    private final LeaseEngine engine;
    private final String id;
    private final LatchCandidacy candidacy;

    /** Checks its arguments and does no I/O; {@link #start()} joins the election. */
    public LeaderLatch(CuratorFramework client, String path, String participantId) {
        Arguments.client(client);
        Arguments.path(path);
        this.id = Arguments.participantId(participantId);
        byte[] data = id.getBytes(StandardCharsets.UTF_8);
        this.engine = new LeaseEngine(client, path, PREFIX, LeasePredicate.maxLeases(1), data);
        // Listeners hear of changes on a queue apart from the candidacy's own: one that blocks, say in await() on a
        // direct executor, must not hold back the grant that would end its wait.
        OrderedListeners<LeaderListener> listeners = new OrderedListeners<>(path, SerialExecutor.onCallbacks());
        this.candidacy = new LatchCandidacy(engine, toString(), SerialExecutor.onCallbacks(), listeners);
    }

    /**
     * Joins the election. Once only: a second call, or a call after {@link #close()}, throws
     * {@link IllegalStateException}, as does a client that was never started; a closed client throws
     * {@link CoordinationException}. A start refused for its client's sake leaves this object unstarted.
     */
    public void start() {
        candidacy.start();
    }

    /**
     * True while this latch holds a HELD term, or a SUSPECT one under {@code SessionConnectionStateErrorPolicy}. False
     * at once when the term turns LOST, or SUSPECT under the standard policy.
     */
    public boolean hasLeadership() {
        return candidacy.term().isPresent();
    }

    /**
     * Waits until this latch leads.
     *
     * @throws IllegalStateException if the latch is not started, or is closed before it leads
     * @throws CoordinationException if the latch left the election: its client was closed
     */
    public void await() throws InterruptedException {
        candidacy.await(Deadline.forever());
    }

    /**
     * Waits at most {@code timeout} for this latch to lead, and answers whether it does. {@link Duration#ZERO}
     * looks once; a timeout too long to count in nanoseconds, such as {@code ChronoUnit.FOREVER.getDuration()}, waits
     * for ever. Throws as {@link #await()} does when the latch never can lead.
     */
    public boolean await(Duration timeout) throws InterruptedException {
        return candidacy.await(Deadline.after(Arguments.timeout(timeout)));
    }

    /** The current term, present only while this latch leads. Its fencing token is the leader epoch. */
    public Optional<Lease> term() {
        return candidacy.term();
    }

    /**
     * Tells {@code listener}, on {@code executor}, of every change of leadership after this call, in order. Added while
     * the latch leads, it is told {@code isLeader} with the current term first, so that every {@code notLeader} it
     * hears follows an {@code isLeader}. A listener that throws is logged and ignored.
     */
    public void addListener(LeaderListener listener, Executor executor) {
        candidacy.addListener(listener, executor);
    }

    /**
     * The first participant in queue order: the leader, or the next one while the leader hands over. As {@link
     * #participants()}: one children read, and one read of ids per 15 participants.
     */
    public Optional<Participant> leader() {
        return participants().stream().findFirst();
    }

    /**
     * Every participant on the path, leader first, in queue order: one children read, then the ids in one multi-read
     * per 15 participants (under the default {@code jute.maxbuffer}), sent together.
     */
    public List<Participant> participants() {
        return engine.participants();
    }

    public String id() {
        return id;
    }

    /**
     * Leaves the election: {@code notLeader()} fires if this latch led, a pending request is withdrawn, and the node
     * is deleted (in the background, retried until it is gone), so the next participant takes over. Idempotent.
     */
    @Override
    public void close() {
        candidacy.close();
    }

    @Override
    public String toString() {
        return "LeaderLatch[" + engine.path() + ", id=" + id + "]";
    }
}
