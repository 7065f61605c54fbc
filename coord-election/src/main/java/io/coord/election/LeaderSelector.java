package io.coord.election;

import io.coord.core.LeasePredicate;
import io.coord.core.Participant;
import io.coord.core.internal.Arguments;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.LeaseEngine;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.apache.curator.framework.CuratorFramework;

/**
 * Runs a {@link LeadershipTask} each time it wins the election; a term lasts until the task returns.
 *
 * <p>Nodes use the mutex layout, {@code <path>/_c_<uuid>-lock-<seq>} with the participant id as data, so this
 * selector and Curator's {@code LeaderSelector} take turns on one path.
 *
 * <p>The task runs on a thread this selector owns. That thread is interrupted when the term stops leading, on
 * {@link #interruptLeadership()} and on {@link #close()}. The term's znode is deleted only when the task returns, so
 * the next leader does not start while this task still runs, unless this session is lost (then the term is LOST and
 * the next leader's epoch is larger: fence your writes with it).
 *
 * <p>When the term stops leading depends on the client's {@code ConnectionStateErrorPolicy}:
 *
 * <ul>
 *   <li>Under Curator's default, {@code StandardConnectionStateErrorPolicy}, a term stops leading when it turns
 *       SUSPECT (connection down) or LOST: the task is interrupted and {@link #hasLeadership()} is false at once.
 *   <li>Under {@code SessionConnectionStateErrorPolicy} (set with
 *       {@code CuratorFrameworkFactory.builder().connectionStateErrorPolicy(...)}), it stops leading only when LOST
 *       (session expired, znode gone). Through SUSPECT the task is not interrupted and {@link #hasLeadership()} stays
 *       true; the term's lease still reports SUSPECT, which a task that must not act on a possibly dead session can
 *       check, or it can fence its writes with {@link io.coord.core.Lease#fencedCheck()}. When the reconnect confirms
 *       the znode, nothing happens.
 * </ul>
 *
 * <p>A queued attempt can be withdrawn with {@link #cancelQueued()} and made again with {@link #requeue()}.
 *
 * <pre>{@code
 * LeaderSelector selector = new LeaderSelector(client, "/election/billing", "node-1", term -> {
 *     while (!Thread.currentThread().isInterrupted()) {
 *         billing.runBatch(term.fencingToken());
 *     }
 * });
 * selector.autoRequeue();
 * selector.start();
 * }</pre>
 */
public final class LeaderSelector implements AutoCloseable {
    static final String PREFIX = "lock-";

    private final LeaseEngine engine;
    private final String id;
    private final SelectorTerms terms;

    /** Checks its arguments and does no I/O; {@link #start()} joins the election. */
    public LeaderSelector(CuratorFramework client, String path, String participantId, LeadershipTask task) {
        Arguments.client(client);
        Arguments.path(path);
        this.id = Arguments.participantId(participantId);
        Objects.requireNonNull(task, "task must not be null");
        byte[] data = id.getBytes(StandardCharsets.UTF_8);
        this.engine = new LeaseEngine(
                client, path, PREFIX, LeasePredicate.maxLeases(1), data, Deadline.SYSTEM_TICKER, "leader-selector");
        this.terms = new SelectorTerms(engine, toString(), task);
    }

    /**
     * Joins the election. Once only: a second call, or a call after {@link #close()}, throws
     * {@link IllegalStateException}, as does a client that was never started; a closed client throws
     * {@link io.coord.core.CoordinationException}. A start refused for its client's sake leaves this object unstarted.
     */
    public void start() {
        terms.start();
    }

    /**
     * Re-enter the election after each term from now on, at the back of the queue: queued again before the term's
     * node is deleted, so that selectors which all requeue take turns in one order, each leading once per round (a
     * term that ends while its client is disconnected may lose its place). An attempt that fails without leading
     * (ZooKeeper refuses its create, say, throttled or over a quota or under an ACL: not a lost connection or session,
     * which it rides out) is logged and made again later, 1 s after the first failure in a row and twice as long
     * after each next one, up to 30 s, until it leads, the selector is closed or its client is. While it waits to try
     * again it counts as queued: {@link #requeue()} returns false, and {@link #cancelQueued()} withdraws the retry
     * (then {@link #requeue()} tries at once). Without auto-requeueing such a failure leaves the selector out of the
     * election until {@link #requeue()}.
     */
    public void autoRequeue() {
        terms.autoRequeue();
    }

    /**
     * Re-enters the election once, at the back of the queue. False if already queued or leading, or closed. Undoes
     * {@link #cancelQueued()}.
     *
     * @throws IllegalStateException if the selector was never started
     */
    public boolean requeue() {
        return terms.requeue();
    }

    /**
     * Withdraws the queued attempt that has not led yet, the counterpart of {@link #requeue()}: its znode is deleted
     * (in the background, retried until it is gone), so it never leads, and the selector stays out of the election
     * until {@link #requeue()} queues it again, at the back. Returns true if an attempt was withdrawn; false if
     * nothing was queued: not started, leading, out of the election already, or closed. A running term is not
     * affected: it ends when the task returns, which {@link #interruptLeadership()} asks for.
     *
     * <p>With {@link #autoRequeue()}, the selector re-enters after each term it leads. A withdrawn attempt is not a
     * term, so nothing re-enters it: it stays out until {@link #requeue()}, and auto-requeueing goes on after the next
     * term. Called while leading, this returns false and the end of the term queues again as usual.
     */
    public boolean cancelQueued() {
        return terms.cancelQueued();
    }

    /**
     * True while the task runs on a term that leads: HELD, or SUSPECT under {@code SessionConnectionStateErrorPolicy}.
     * False at once when the term stops leading.
     */
    public boolean hasLeadership() {
        return terms.hasLeadership();
    }

    /** Interrupts the running task, if any. The term ends when the task returns. */
    public void interruptLeadership() {
        terms.interruptLeadership();
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

    /**
     * Leaves the election: withdraws a pending request and interrupts a running task. The term's znode is deleted
     * when the task returns, and the selector's thread ends after it. Does not wait for the task: one whose term was
     * granted as the selector closed may still start after this returns, with its thread interrupted already and its
     * term still held (its fencing token is good until the task returns). Idempotent.
     */
    @Override
    public void close() {
        terms.close();
    }

    @Override
    public String toString() {
        return "LeaderSelector[" + engine.path() + ", id=" + id + "]";
    }
}
