package io.coord.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.coord.core.Participant;
import io.coord.testkit.ZooKeeperEnsemble;
import io.coord.testkit.ZooKeeperTest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.framework.state.SessionConnectionStateErrorPolicy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.integration.leader.Candidate;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.leader.event.LeaderEventPublisher;

@ZooKeeperTest
@Timeout(60) // a term that never ends would hang stop(), in the tests and in @AfterEach
class CoordLeaderInitiatorTest {
    static ZooKeeperEnsemble zk;
    private final List<String> events = new CopyOnWriteArrayList<>();
    private final List<CoordLeaderInitiator> started = new ArrayList<>();

    @AfterEach
    void stopInitiators() {
        started.forEach(CoordLeaderInitiator::stop);
    }

    /** A candidate that records its grants and revocations, and keeps the contexts it was given. */
    private final class Recorder extends DefaultCandidate {
        final List<Context> granted = new CopyOnWriteArrayList<>();

        Recorder(String id) {
            super(id, "billing");
        }

        @Override
        public void onGranted(Context context) {
            granted.add(context);
            events.add(getId() + " granted");
        }

        @Override
        public void onRevoked(Context context) {
            events.add(getId() + " revoked");
        }
    }

    /**
     * A candidate whose first onGranted keeps running until {@link #finish} is counted down, swallowing every
     * interrupt on the way, as careless application code does.
     */
    private final class Stubborn extends DefaultCandidate {
        final CountDownLatch finish = new CountDownLatch(1);
        final AtomicInteger swallowed = new AtomicInteger();
        private final AtomicInteger grants = new AtomicInteger();

        Stubborn(String id) {
            super(id, "billing");
        }

        @Override
        public void onGranted(Context context) {
            events.add(getId() + " granted");
            if (grants.incrementAndGet() > 1) {
                return;
            }
            while (finish.getCount() > 0) {
                try {
                    finish.await();
                } catch (InterruptedException e) {
                    swallowed.incrementAndGet();
                }
            }
            if (Thread.interrupted()) { // one that came after the last wait is swallowed too
                swallowed.incrementAndGet();
            }
        }

        @Override
        public void onRevoked(Context context) {
            events.add(getId() + " revoked");
        }
    }

    /**
     * Waits until {@code count} candidates are queued for the role: a leader that gives up before the last one's node
     * lands queues again ahead of it, and leads again.
     */
    private void awaitCandidates(int count) throws Exception {
        CuratorFramework reader = zk.newClient();
        await().until(() -> reader.getChildren().forPath("/leaders/billing").size() == count);
    }

    /**
     * Waits until {@code initiator} leads and the grants published so far number {@code grants}: its context says
     * it leads before the candidate's onGranted has run and the grant is published.
     */
    private void awaitGrants(CoordLeaderInitiator initiator, int grants) {
        await().until(() -> initiator.getContext().isLeader()
                && events.stream().filter("event granted billing"::equals).count() >= grants);
    }

    private CoordLeaderInitiator start(CuratorFramework client, Candidate candidate) {
        CoordLeaderInitiator initiator = new CoordLeaderInitiator(client, candidate, "/leaders");
        initiator.setLeaderEventPublisher(new LeaderEventPublisher() {
            @Override
            public void publishOnGranted(Object source, Context context, String role) {
                events.add("event granted " + role);
            }

            @Override
            public void publishOnRevoked(Object source, Context context, String role) {
                events.add("event revoked " + role);
            }

            @Override
            public void publishOnFailedToAcquire(Object source, Context context, String role) {
                events.add("event failed " + role);
            }
        });
        initiator.start();
        started.add(initiator);
        return initiator;
    }

    @Test
    void oneCandidateLeadsAndYieldingHandsLeadershipToTheOther() throws Exception {
        Recorder a = new Recorder("a");
        Recorder b = new Recorder("b");
        CoordLeaderInitiator first = start(zk.newClient(), a);
        awaitGrants(first, 1);
        CoordLeaderInitiator second = start(zk.newClient(), b);
        assertThat(first.path()).isEqualTo("/leaders/billing");
        assertThat(events).containsExactly("a granted", "event granted billing");
        assertThat(second.getContext().isLeader()).isFalse();
        long firstEpoch = ((CoordLeaderInitiator.CoordContext) a.granted.get(0)).fencingToken();
        awaitCandidates(2);
        assertThat(second.leader().map(Participant::id)).contains("a");
        assertThat(first.participants()).extracting(Participant::id).containsExactly("a", "b");

        first.getContext().yield();

        awaitGrants(second, 2);
        assertThat(events)
                .containsSubsequence("a revoked", "event revoked billing", "b granted", "event granted billing");
        assertThat(((CoordLeaderInitiator.CoordContext) b.granted.get(0)).fencingToken())
                .isGreaterThan(firstEpoch);
        assertThat(a.granted.get(0).isLeader()).isFalse();
        assertThat(first.isRunning()).isTrue(); // it queued again, behind b
    }

    @Test
    void aCandidateWhoseOnGrantedFailsIsRevokedAllTheSameWithItsInterruptCleared() throws Exception {
        List<Boolean> interruptedInRevoke = new CopyOnWriteArrayList<>();
        AtomicInteger grants = new AtomicInteger();
        DefaultCandidate failing = new DefaultCandidate("f", "billing") {
            @Override
            public void onGranted(Context context) {
                events.add("f granted");
                int grant = grants.incrementAndGet();
                if (grant == 1) {
                    throw new IllegalStateException("half started"); // it may have begun to act as leader
                }
                if (grant == 2) {
                    context.yield(); // interrupts this thread, and nothing waits to take the interrupt
                    throw new IllegalStateException("gave up and failed");
                }
            }

            @Override
            public void onRevoked(Context context) {
                interruptedInRevoke.add(Thread.currentThread().isInterrupted());
                events.add("f revoked");
            }
        };
        CoordLeaderInitiator initiator = start(zk.newClient(), failing);

        await().until(() -> events.contains("event granted billing")); // the third term leads
        initiator.stop();
        assertThat(events.subList(0, 6))
                .containsExactly(
                        "f granted", "f revoked", "f granted", "f revoked", "f granted", "event granted billing");
        assertThat(interruptedInRevoke.subList(0, 2)).containsExactly(false, false);
        zk.assertNoLeaksUnder("/leaders/billing");
    }

    @Test
    void theRevocationIsPublishedEvenWhenTheCandidatesOnRevokedThrowsAnError() throws Exception {
        DefaultCandidate failing = new DefaultCandidate("e", "billing") {
            @Override
            public void onGranted(Context context) {
                events.add("e granted");
            }

            @Override
            public void onRevoked(Context context) {
                events.add("e revoked");
                throw new AssertionError("cleanup failed");
            }
        };
        CoordLeaderInitiator initiator = start(zk.newClient(), failing);
        awaitGrants(initiator, 1);

        initiator.getContext().yield();

        // The Error goes on to the selector's thread, where Awaitility would take it for the test's own failure.
        await().dontCatchUncaughtExceptions().until(() -> events.contains("event revoked billing"));
        assertThat(events.subList(0, 4))
                .containsExactly("e granted", "event granted billing", "e revoked", "event revoked billing");
        initiator.stop();
        zk.assertNoLeaksUnder("/leaders/billing");
    }

    @Test
    void leadershipMovesWhenTheLeadersSessionExpires() throws Exception {
        CuratorFramework leaderClient = zk.newClient();
        CoordLeaderInitiator first = start(leaderClient, new Recorder("a"));
        await().until(() -> first.getContext().isLeader());
        CoordLeaderInitiator second = start(zk.newClient(), new Recorder("b"));
        awaitCandidates(2);

        zk.expireSession(leaderClient);

        await().until(() -> second.getContext().isLeader());
        // The old leader's client hears of its expiry on its own threads, maybe after the other's grant.
        await().untilAsserted(() -> assertThat(events).contains("a revoked", "b granted"));
    }

    @Test
    void aTermLostWithItsSessionIsRevokedAndRejoinsEvenIfOnGrantedSwallowedTheInterrupt() throws Exception {
        // Under this policy only the session's loss interrupts the term, so one swallowed interrupt is the last.
        CuratorFramework client =
                zk.newClient(builder -> builder.connectionStateErrorPolicy(new SessionConnectionStateErrorPolicy()));
        Stubborn candidate = new Stubborn("s");
        CoordLeaderInitiator initiator = start(client, candidate);
        await().until(() -> events.contains("s granted"));

        zk.expireSession(client);
        await().until(() -> candidate.swallowed.get() > 0);
        candidate.finish.countDown(); // onGranted returns as if nothing had happened

        // The lost term is revoked, but was never announced: no event for it either way.
        await().until(() -> events.contains("event granted billing"));
        await().until(() -> initiator.getContext().isLeader());
        assertThat(events).containsExactly("s granted", "s revoked", "s granted", "event granted billing");
    }

    @Test
    void stopReturnsOnceOnGrantedReturnsEvenIfItSwallowedTheInterrupt() throws Exception {
        Stubborn candidate = new Stubborn("s");
        CoordLeaderInitiator initiator = start(zk.newClient(), candidate);
        await().until(() -> events.contains("s granted"));

        CompletableFuture<Void> stopped = CompletableFuture.runAsync(initiator::stop);
        await().until(() -> candidate.swallowed.get() > 0);
        assertThat(stopped).isNotDone(); // stop() waits for onRevoked, which waits for onGranted
        candidate.finish.countDown();

        stopped.get(20, TimeUnit.SECONDS);
        // Stopped while onGranted ran: revoked, and never announced, so no event either way.
        assertThat(events).containsExactly("s granted", "s revoked");
        assertThat(initiator.isRunning()).isFalse();
        zk.assertNoLeaksUnder("/leaders/billing");
    }

    @Test
    void aStopWhileAnotherWaitsForTheTermWaitsForItToo() throws Exception {
        Stubborn candidate = new Stubborn("s");
        CoordLeaderInitiator initiator = start(zk.newClient(), candidate);
        await().until(() -> events.contains("s granted"));
        CompletableFuture<Void> first = CompletableFuture.runAsync(initiator::stop);
        await().until(() -> candidate.swallowed.get() > 0);

        CompletableFuture<Void> second = new CompletableFuture<>();
        Thread secondStopper = new Thread(() -> {
            initiator.stop();
            second.complete(null);
        });
        secondStopper.start();
        List<String> seenByCallback = new CopyOnWriteArrayList<>();
        initiator.stop(() -> seenByCallback.addAll(events));
        // Parked on the term's end, or (wrongly) returned.
        await().until(() -> second.isDone() || waitsForAFuture(secondStopper));
        assertThat(second).isNotDone();
        assertThat(seenByCallback).isEmpty();
        candidate.finish.countDown();

        first.get(20, TimeUnit.SECONDS);
        second.get(20, TimeUnit.SECONDS);
        await().until(() -> !seenByCallback.isEmpty());
        assertThat(seenByCallback).containsExactly("s granted", "s revoked");
        zk.assertNoLeaksUnder("/leaders/billing");
    }

    private static boolean waitsForAFuture(Thread thread) {
        Object blocker = LockSupport.getBlocker(thread);
        return blocker != null && blocker.getClass().getName().startsWith(CompletableFuture.class.getName());
    }

    @Test
    void theInitiatorsContextIsOneLiveObjectForEveryTerm() throws Exception {
        Recorder a = new Recorder("a");
        CoordLeaderInitiator initiator = new CoordLeaderInitiator(zk.newClient(), a, "/leaders");
        Context kept = initiator.getContext(); // as a health check or a guard built at startup keeps it
        assertThat(kept.isLeader()).isFalse();
        assertThat(kept.getRole()).isEqualTo("billing");
        kept.yield(); // nothing runs: nothing to give up
        initiator.start();
        started.add(initiator);
        awaitGrants(initiator, 0);
        assertThat(kept.isLeader()).isTrue();

        kept.yield(); // gives up the term that runs now, and the candidate queues again

        await().until(() -> a.granted.size() == 2 && kept.isLeader());
        assertThat(a.granted.get(0).isLeader()).isFalse(); // a term's own context speaks for that term alone
        assertThat(a.granted.get(1).isLeader()).isTrue();
        assertThat(initiator.getContext()).isSameAs(kept);
        assertThat(events).containsSubsequence("a granted", "a revoked", "a granted");

        initiator.stop();
        assertThat(kept.isLeader()).isFalse();
        initiator.start();
        await().until(kept::isLeader);
    }

    @Test
    void aLateYieldOnAnEndedTermLeavesTheNextTermAlone() throws Exception {
        Recorder a = new Recorder("a");
        CoordLeaderInitiator initiator = start(zk.newClient(), a);
        awaitGrants(initiator, 1);
        Context first = a.granted.get(0);
        long firstEpoch = ((CoordLeaderInitiator.CoordContext) first).fencingToken();
        first.yield();
        awaitGrants(initiator, 2);
        Context second = a.granted.get(1);
        assertThat(((CoordLeaderInitiator.CoordContext) second).fencingToken()).isGreaterThan(firstEpoch);

        first.yield();

        assertThat(first.isLeader()).isFalse();
        assertThat(second.isLeader()).isTrue();
        assertThat(events)
                .containsExactly(
                        "a granted",
                        "event granted billing",
                        "a revoked",
                        "event revoked billing",
                        "a granted",
                        "event granted billing");
    }

    @Test
    void startStartsAClientNobodyStartedInTheLifecyclePhaseOfSpringIntegrations() throws Exception {
        CuratorFramework client = zk.unstartedClient(builder -> {});
        CoordLeaderInitiator initiator = new CoordLeaderInitiator(client, new Recorder("a"), "/leaders");
        assertThat(initiator.getPhase()).isEqualTo(Integer.MAX_VALUE - 1000);
        initiator.start();
        started.add(initiator);
        await().until(() -> initiator.getContext().isLeader());
        assertThat(client.getState()).isEqualTo(CuratorFrameworkState.STARTED);
    }

    @Test
    void stopRevokesBeforeItReturnsAndLeavesNothingBehind() throws Exception {
        CoordLeaderInitiator initiator = start(zk.newClient(), new Recorder("a"));
        awaitGrants(initiator, 1);

        initiator.stop();

        assertThat(events).endsWith("a revoked", "event revoked billing");
        assertThat(initiator.isRunning()).isFalse();
        assertThat(initiator.getContext().isLeader()).isFalse();
        zk.assertNoLeaksUnder("/leaders/billing");
        assertThat(initiator.leader()).isEmpty();
        assertThat(initiator.participants()).isEmpty();

        initiator.start(); // a stopped initiator can start again
        await().until(() -> initiator.getContext().isLeader());
    }

    @Test
    void stopWithACallbackRunsItOnceTheTermHasEnded() throws Exception {
        CoordLeaderInitiator initiator = start(zk.newClient(), new Recorder("a"));
        awaitGrants(initiator, 1);
        List<String> seenByCallback = new CopyOnWriteArrayList<>();

        initiator.stop(() -> seenByCallback.addAll(events));

        await().until(() -> !seenByCallback.isEmpty());
        assertThat(seenByCallback).endsWith("a revoked", "event revoked billing");
    }

    @Test
    void aCandidateThatStopsItsOwnInitiatorWhileLeadingIsRevokedWithoutDeadlock() throws Exception {
        assertACandidateStopsItself("/leaders-self", "s stopped itself", initiator -> {
            initiator.stop();
            return "s stopped itself";
        });
    }

    @Test
    void aCandidateThatStopsItsOwnInitiatorWithACallbackWhileLeadingHasTheCallbackRunAtOnce() throws Exception {
        // As Spring's lifecycle processor does when the leader closes its own context: stop(callback), then a wait for
        // the callback on that same thread, which the term's end would wait for in turn.
        assertACandidateStopsItself("/leaders-self-callback", "s stopped itself, callback run: true", initiator -> {
            CountDownLatch stopped = new CountDownLatch(1);
            initiator.stop(stopped::countDown);
            return "s stopped itself, callback run: " + (stopped.getCount() == 0);
        });
    }

    /**
     * A candidate under {@code root} that stops its own initiator from onGranted with {@code stop}, which answers what
     * it saw, as {@code expected}: the stop returns, then onRevoked runs, and nothing is left under the role.
     */
    private void assertACandidateStopsItself(String root, String expected, Function<CoordLeaderInitiator, String> stop)
            throws Exception {
        AtomicReference<CoordLeaderInitiator> self = new AtomicReference<>();
        CoordLeaderInitiator initiator = new CoordLeaderInitiator(
                zk.newClient(),
                new DefaultCandidate("s", "billing") {
                    @Override
                    public void onGranted(Context context) {
                        events.add("s granted");
                        events.add(stop.apply(self.get()));
                    }

                    @Override
                    public void onRevoked(Context context) {
                        events.add("s revoked");
                    }
                },
                root);
        self.set(initiator);
        initiator.start();

        await().until(() -> events.contains("s revoked"));
        assertThat(events).containsExactly("s granted", expected, "s revoked");
        assertThat(initiator.isRunning()).isFalse();
        zk.assertNoLeaksUnder(root + "/billing");
    }

    @Test
    void badRolesRootsAndIdsAreRefusedBeforeAnythingIsWritten() throws Exception {
        CuratorFramework client = zk.newClient();
        assertThatThrownBy(() -> new CoordLeaderInitiator(client, new DefaultCandidate("a", "x/y")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("candidate role 'x/y' is not a valid znode name: it must be non-empty, not . or .., and"
                        + " contain no /");
        assertThatThrownBy(() -> new CoordLeaderInitiator(client, new DefaultCandidate("a", "r"), "leaders"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("invalid ZooKeeper path \"leaders/r\"");
        assertThatThrownBy(() -> new CoordLeaderInitiator(client, new DefaultCandidate("x".repeat(70_000), "r")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("participantId must be at most");
        assertThatThrownBy(() -> new CoordLeaderInitiator(client, null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("candidate must not be null");
        assertThatThrownBy(() -> new CoordLeaderInitiator(client, new DefaultCandidate("a", "r"), "//"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("invalid ZooKeeper path \"//r\"");
        assertThat(new CoordLeaderInitiator(client, new DefaultCandidate("a", "r")).path())
                .isEqualTo("/spring-integration/leader/r");
        // Roots as spring-integration-zookeeper takes them: ending in "/", as its own default does, or the top.
        assertThat(new CoordLeaderInitiator(client, new DefaultCandidate("a", "r"), "/spring-integration/leader/")
                        .path())
                .isEqualTo("/spring-integration/leader/r");
        assertThat(new CoordLeaderInitiator(client, new DefaultCandidate("a", "r"), "/").path())
                .isEqualTo("/r");
        assertThat(client.checkExists().forPath("/spring-integration")).isNull();
    }
}
