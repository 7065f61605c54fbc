package io.coord.spring;

import io.coord.core.Lease;
import io.coord.core.LeaseState;
import io.coord.core.Participant;
import io.coord.core.internal.Arguments;
import io.coord.election.LeaderSelector;
import io.coord.election.LeadershipTask;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.ApplicationEventPublisherAware;
import org.springframework.context.SmartLifecycle;
import org.springframework.integration.leader.Candidate;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.event.DefaultLeaderEventPublisher;
import org.springframework.integration.leader.event.LeaderEventPublisher;

/**
 * Spring Integration leadership on coord's {@link LeaderSelector}: a drop-in for spring-integration-zookeeper's
 * {@code LeaderInitiator}. While it runs, the {@link Candidate} takes part in the election at {@code
 * <root>/<role>}; when it wins, its {@link Candidate#onGranted(Context)} is called and an {@code OnGrantedEvent} is
 * published, and when it stops leading, {@link Candidate#onRevoked(Context)} and an {@code OnRevokedEvent}.
 *
 * <p>Leadership ends when the {@link Context} is yielded, when the client's connection is suspended or its session
 * lost (Curator's default error policy; see {@link LeaderSelector}), and on {@link #stop()}. After a term that ended
 * while running, the candidate joins the election again at the back of the queue.
 *
 * <p>The context given to the candidate, and carried by the events, is the term's {@link CoordContext}: its {@link
 * CoordContext#fencingToken()} is the term's leader epoch, larger for every later leader, for writes that must be
 * rejected once a newer leader exists. It speaks for its own term only, and says false for good once that term ends.
 * {@link #getContext()} is the initiator's: one live context for whichever term runs when it is asked, as
 * spring-integration-zookeeper gives it.
 */
public final class CoordLeaderInitiator implements SmartLifecycle, ApplicationEventPublisherAware {
    /**
     * Where the election takes place unless told otherwise, {@code /spring-integration/leader/<role>}: the path of
     * spring-integration-zookeeper's {@code LeaderInitiator}, whose Curator {@code LeaderSelector} takes turns with
     * coord's on one path, so a fleet can move from one initiator to the other a node at a time.
     */
    public static final String DEFAULT_ROOT = "/spring-integration/leader";
    /**
     * The lifecycle phase unless told otherwise: late to start and early to stop, and the phase of
     * spring-integration-zookeeper's {@code LeaderInitiator}, so that the application's other lifecycle beans start
     * and stop around either initiator alike.
     */
    public static final int DEFAULT_PHASE = Integer.MAX_VALUE - 1000;

    private static final Logger log = LoggerFactory.getLogger(CoordLeaderInitiator.class);

    private final CuratorFramework client;
    private final Candidate candidate;
    private final String path;
    private final ReentrantLock lifecycle = new ReentrantLock();
    private final Context context = new CurrentTermContext();
    private volatile LeaderEventPublisher publisher;
    private volatile boolean publisherSet;
    private volatile boolean autoStartup = true;
    private volatile int phase = DEFAULT_PHASE;
    private Run run; // guarded by lifecycle
    // Guarded by lifecycle: completes once the term of the last run stopped has ended, for every stop that comes
    // while it ends, so that none returns before the candidate's onRevoked has.
    private CompletableFuture<Void> lastTermEnded = CompletableFuture.completedFuture(null);
    // True on a thread while it runs a term: a stop from there must not wait for the term it is in.
    private final ThreadLocal<Boolean> termThread = new ThreadLocal<>();

    /** Elects at {@link #DEFAULT_ROOT}{@code /<role>}. Does no I/O: {@link #start()} joins the election. */
    public CoordLeaderInitiator(CuratorFramework client, Candidate candidate) {
        this(client, candidate, DEFAULT_ROOT);
    }

    /**
     * Elects at {@code <root>/<role>}. Does no I/O: {@link #start()} joins the election.
     *
     * @throws NullPointerException if {@code client} or {@code candidate} is null, or the candidate's id is
     * @throws IllegalArgumentException if {@code root} is not a valid path (one ending in {@code /} is taken as if it
     *     did not, and {@code /} is the top), the candidate's role is not a valid znode name, or its id is longer than
     *     a participant id may be
     */
    public CoordLeaderInitiator(CuratorFramework client, Candidate candidate, String root) {
        this.client = Arguments.client(client);
        this.candidate = Objects.requireNonNull(candidate, "candidate must not be null");
        String role = candidate.getRole();
        if (role == null || role.isEmpty() || role.indexOf('/') >= 0 || role.equals(".") || role.equals("..")) {
            throw new IllegalArgumentException("candidate role '" + role
                    + "' is not a valid znode name: it must be non-empty, not . or .., " + "and contain no /");
        }
        this.path = Arguments.path(electionPath(root, role));
        Arguments.participantId(candidate.getId());
    }

    /**
     * {@code <root>/<role>}. spring-integration-zookeeper takes a root that ends in {@code /}, as its own default does,
     * and {@code /} itself for the top, so both are taken here too.
     */
    private static String electionPath(String root, String role) {
        if (root == null) {
            throw new IllegalArgumentException("root must not be null");
        }
        return (root.endsWith("/") ? root : root + "/") + role;
    }

    /** The election's path, {@code <root>/<role>}. */
    public String path() {
        return path;
    }

    /** Publishes leadership events through {@code publisher} instead of the application context. */
    public void setLeaderEventPublisher(LeaderEventPublisher publisher) {
        this.publisher = publisher;
        this.publisherSet = true;
    }

    /** Called by Spring: events go to the application context unless a publisher was set. */
    @Override
    public void setApplicationEventPublisher(ApplicationEventPublisher applicationEventPublisher) {
        if (!publisherSet) {
            this.publisher = new DefaultLeaderEventPublisher(applicationEventPublisher);
        }
    }

    public void setAutoStartup(boolean autoStartup) {
        this.autoStartup = autoStartup;
    }

    @Override
    public boolean isAutoStartup() {
        return autoStartup;
    }

    public void setPhase(int phase) {
        this.phase = phase;
    }

    @Override
    public int getPhase() {
        return phase;
    }

    /**
     * Joins the election. Idempotent while running. Starts the client if nobody has yet, as spring-integration-zookeeper's
     * {@code LeaderInitiator} does (its owner still closes it).
     */
    @Override
    public void start() {
        // Outside the lock: starting a client makes its ZooKeeper handle, which may look host names up.
        if (client.getState() == CuratorFrameworkState.LATENT) {
            try {
                client.start();
            } catch (IllegalStateException e) {
                if (client.getState() == CuratorFrameworkState.LATENT) {
                    throw e;
                } // somebody else started it first
            }
        }
        lifecycle.lock();
        try {
            if (run == null) {
                Run started = new Run();
                started.selector.autoRequeue();
                started.selector.start();
                run = started;
            }
        } finally {
            lifecycle.unlock();
        }
    }

    /**
     * Leaves the election and returns once a running term has ended: the candidate's onRevoked has returned. A stop
     * while another is under way waits for the same term. Called by the candidate itself while it leads (from
     * onGranted), it returns at once, and the term ends after.
     */
    @Override
    public void stop() {
        CompletableFuture<Void> ended = leave();
        if (ended.isDone() || termThread.get() == Boolean.TRUE) {
            return;
        }
        try {
            ended.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            throw new IllegalStateException("the leadership term failed to end", e.getCause());
        }
    }

    /**
     * Leaves the election; {@code callback} runs once a running term has ended. Called by the candidate itself while
     * it leads (a context closed from onGranted, say), it runs the callback at once, as {@link #stop()} returns at
     * once there: the term can end only after the candidate's code returns, and whoever waits for the callback may be
     * holding up that very thread.
     */
    @Override
    public void stop(Runnable callback) {
        CompletableFuture<Void> ended = leave();
        if (termThread.get() == Boolean.TRUE) {
            callback.run();
            return;
        }
        ended.whenComplete((ignored, failure) -> callback.run());
    }

    @Override
    public boolean isRunning() {
        lifecycle.lock();
        try {
            return run != null;
        } finally {
            lifecycle.unlock();
        }
    }

    /**
     * The initiator's context, one object for its whole life, as spring-integration-zookeeper's initiator gives it:
     * {@link Context#isLeader()} is true while a term of this initiator leads, and {@link Context#yield()} gives up
     * the term that runs when it is called. A health check or a guard may keep it. The fencing token is the term's:
     * see the {@link CoordContext} given to the candidate's onGranted and carried by the granted event.
     */
    public Context getContext() {
        return context;
    }

    private CoordContext currentTerm() {
        lifecycle.lock();
        try {
            return run == null ? null : run.current;
        } finally {
            lifecycle.unlock();
        }
    }

    /**
     * Who leads the election now, read from ZooKeeper as {@link LeaderSelector#leader()} reads it; empty when nobody
     * does, or while this initiator is not running. spring-integration-zookeeper's context offers the same as
     * {@code getLeader()}, in Curator's recipe types.
     *
     * @throws io.coord.core.CoordinationException if ZooKeeper could not be read
     */
    public Optional<Participant> leader() {
        LeaderSelector selector = runningSelector();
        return selector == null ? Optional.empty() : selector.leader();
    }

    /**
     * Every candidate in the election, the leader first, as {@link LeaderSelector#participants()} reads them; empty
     * while this initiator is not running.
     *
     * @throws io.coord.core.CoordinationException if ZooKeeper could not be read
     */
    public List<Participant> participants() {
        LeaderSelector selector = runningSelector();
        return selector == null ? List.of() : selector.participants();
    }

    private LeaderSelector runningSelector() {
        lifecycle.lock();
        try {
            return run == null ? null : run.selector;
        } finally {
            lifecycle.unlock();
        }
    }

    private CompletableFuture<Void> leave() {
        Run stopping;
        CoordContext current;
        CompletableFuture<Void> termEnded = new CompletableFuture<>();
        lifecycle.lock();
        try {
            stopping = run;
            run = null;
            if (stopping == null) {
                return lastTermEnded; // stopped already, or stopping on another thread
            }
            stopping.stopped = true;
            current = stopping.current;
            lastTermEnded = termEnded;
        } finally {
            lifecycle.unlock();
        }
        stopping.selector.close();
        if (current == null) {
            termEnded.complete(null);
        } else {
            // The close interrupts the term's thread, but a candidate may swallow that: end the term all the same.
            current.end();
            current.ended.whenComplete((ignored, failure) -> {
                if (failure != null) {
                    termEnded.completeExceptionally(failure);
                } else {
                    termEnded.complete(null);
                }
            });
        }
        return termEnded;
    }

    @Override
    public String toString() {
        return "CoordLeaderInitiator[" + path + ", " + candidate.getId() + "]";
    }

    /** {@link #getContext()}: whatever term runs when it is asked. */
    private final class CurrentTermContext implements Context {
        @Override
        public boolean isLeader() {
            CoordContext term = currentTerm();
            return term != null && term.isLeader();
        }

        @Override
        public void yield() {
            CoordContext term = currentTerm();
            if (term != null) {
                term.yield(); // a term that ended meanwhile is left alone, and so is the one after it
            }
        }

        @Override
        public String getRole() {
            return candidate.getRole();
        }

        @Override
        public String toString() {
            return "CoordLeaderInitiator.Context[" + candidate.getRole() + (isLeader() ? ", leader]" : "]");
        }
    }

    /** One start-to-stop of the initiator: its selector, and the term it leads. */
    private final class Run implements LeadershipTask {
        final LeaderSelector selector = new LeaderSelector(client, path, candidate.getId(), this);
        boolean stopped; // guarded by lifecycle
        CoordContext current; // guarded by lifecycle

        @Override
        public void takeLeadership(Lease term) {
            CoordContext context;
            lifecycle.lock();
            try {
                if (stopped) {
                    return; // won just as the initiator stopped: the candidate never hears of it
                }
                context = new CoordContext(candidate.getRole(), term, selector);
                current = context;
            } finally {
                lifecycle.unlock();
            }
            context.endWhenNotLeading();
            if (!context.leading) {
                // The term stopped leading before the candidate heard of it (and another may lead already): it never
                // does, and the selector queues again.
                context.ended.complete(null);
                clear(context);
                return;
            }
            boolean entered = false;
            boolean granted = false;
            termThread.set(Boolean.TRUE);
            try {
                entered = true;
                candidate.onGranted(context);
                // A term that ended while onGranted ran (a session lost, its interrupt swallowed) is not announced,
                // and so neither is its revocation: a role controller would start endpoints while another may lead.
                granted = context.leading;
                if (granted) {
                    publish(p -> p.publishOnGranted(CoordLeaderInitiator.this, context, candidate.getRole()));
                }
                context.awaitEnd();
            } catch (InterruptedException e) {
                // The term ends: yielded, connection suspended, session lost, or stopped. The flag may have been
                // raised while onGranted ran and is cleared for the next term by the selector.
            } catch (RuntimeException e) {
                log.warn("{}: the candidate's onGranted failed; giving up leadership", CoordLeaderInitiator.this, e);
            } finally {
                context.end();
                // The interrupt that ended the term has done its work: the candidate's cleanup starts without it (a
                // stop() or a lost session while it runs may still interrupt it).
                Thread.interrupted();
                try {
                    if (entered) {
                        // Also after an onGranted that failed or was interrupted: it may have begun to act as leader.
                        try {
                            candidate.onRevoked(context);
                        } catch (RuntimeException e) {
                            log.warn("{}: the candidate's onRevoked failed", CoordLeaderInitiator.this, e);
                        } finally {
                            // Even after an Error: whoever heard of the grant must hear that it ended.
                            if (granted) {
                                publish(p ->
                                        p.publishOnRevoked(CoordLeaderInitiator.this, context, candidate.getRole()));
                            }
                        }
                    }
                } finally {
                    // Even after an Error from the candidate: stop() waits for the term's end.
                    clear(context);
                    termThread.remove();
                    context.ended.complete(null);
                }
            }
        }

        /** The term of {@code context} is over: it is no longer the current one. */
        private void clear(CoordContext context) {
            lifecycle.lock();
            try {
                if (current == context) {
                    current = null;
                }
            } finally {
                lifecycle.unlock();
            }
        }

        private void publish(Consumer<LeaderEventPublisher> event) {
            LeaderEventPublisher p = publisher;
            if (p == null) {
                return;
            }
            try {
                event.accept(p);
            } catch (RuntimeException e) {
                log.warn("{}: publishing a leadership event failed", CoordLeaderInitiator.this, e);
            }
        }
    }

    /**
     * The {@link Context} of one leadership term. {@link #yield()} gives leadership up: the term ends and the
     * candidate rejoins the election at the back.
     *
     * <p>A term ends once, for whichever reason comes first: yielded, its lease no longer leading (connection
     * suspended, session lost, node deleted), or the initiator stopped. The term's thread is interrupted then, and the
     * term ends even if the candidate swallows that interrupt: its onRevoked follows once onGranted returns.
     */
    public static final class CoordContext implements Context {
        private final String role;
        private final Lease term;
        private final LeaderSelector selector;
        private final Thread termThread;
        // Guards the end of the term, so that a yield interrupts the term's thread only while that term runs on it.
        private final ReentrantLock ending = new ReentrantLock();
        private final CountDownLatch over = new CountDownLatch(1);
        final CompletableFuture<Void> ended = new CompletableFuture<>();
        private volatile boolean leading;

        private CoordContext(String role, Lease term, LeaderSelector selector) {
            this.role = role;
            this.term = term;
            this.selector = selector;
            this.termThread = Thread.currentThread();
            this.leading = true;
        }

        /** True while this term leads. */
        @Override
        public boolean isLeader() {
            return leading && selector.hasLeadership();
        }

        /**
         * Gives leadership up, if this term still leads; the candidate's onRevoked follows on the term's thread. A
         * yield on the context of a term that has ended does nothing, whatever term runs now.
         */
        @Override
        public void yield() {
            ending.lock();
            try {
                if (leading) {
                    endLocked();
                    termThread.interrupt(); // still this term's thread: the term cannot end while we hold ending
                }
            } finally {
                ending.unlock();
            }
        }

        @Override
        public String getRole() {
            return role;
        }

        /** The term's fencing token: the leader epoch, larger for every later leader. Still the term's once it ended. */
        public long fencingToken() {
            return term.fencingToken();
        }

        /**
         * Ends the term when its lease stops leading. The selector interrupts the term's thread then, but only the
         * lease says so for certain: an interrupt can be swallowed by the candidate.
         */
        void endWhenNotLeading() {
            term.addStateListener(state -> endUnlessLeading(), Runnable::run);
            endUnlessLeading(); // a change before the listener was added is not heard: look once now
        }

        private void endUnlessLeading() {
            LeaseState state = term.state();
            // SUSPECT leads under SessionConnectionStateErrorPolicy: the selector knows the client's policy.
            if (state == LeaseState.LOST || state == LeaseState.RELEASED || !selector.hasLeadership()) {
                end();
            }
        }

        /** Blocks until the term ends: yielded, no longer leading, or stopped; or until the thread is interrupted. */
        void awaitEnd() throws InterruptedException {
            over.await();
        }

        void end() {
            ending.lock();
            try {
                endLocked();
            } finally {
                ending.unlock();
            }
        }

        private void endLocked() {
            leading = false;
            over.countDown();
        }

        @Override
        public String toString() {
            return "CoordContext[" + role + (isLeader() ? ", leader, epoch " + term.fencingToken() + "]" : "]");
        }
    }
}
