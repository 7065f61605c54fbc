package io.coord.core.internal;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** How the calls of one listener run on an executor the user chose. */
class OrderedListenersTest {
    private static final int CHANGES = 40;

    private final ExecutorService pool = Executors.newFixedThreadPool(4);
    private final OrderedListeners<IntConsumer> listeners =
            new OrderedListeners<>("/ordered", SerialExecutor.onCallbacks());
    private final List<Integer> heard = new CopyOnWriteArrayList<>();
    private final AtomicBoolean overlapped = new AtomicBoolean();

    @AfterEach
    void stopPool() throws InterruptedException {
        pool.shutdownNow();
        pool.awaitTermination(10, TimeUnit.SECONDS);
    }

    @Test
    void aListenerOnAPoolOfManyThreadsHearsOneChangeAtATimeInTheOrderTheyHappened() throws InterruptedException {
        CountDownLatch firstMayReturn = new CountDownLatch(1);
        AtomicBoolean inCall = new AtomicBoolean();
        listeners.add(
                change -> {
                    if (!inCall.compareAndSet(false, true)) {
                        overlapped.set(true);
                    }
                    heard.add(change);
                    if (change == 0) {
                        awaitQuietly(firstMayReturn); // a slow first call: the pool has three idle threads meanwhile
                    }
                    inCall.set(false);
                },
                pool);

        IntStream.range(0, CHANGES).forEach(i -> listeners.fire("change " + i, l -> l.accept(i)));
        await().until(() -> !heard.isEmpty());
        assertEquals(List.of(0), heard, "a later change ran while the first call had not returned");
        firstMayReturn.countDown();

        await().until(() -> heard.size() == CHANGES);
        assertEquals(IntStream.range(0, CHANGES).boxed().toList(), heard);
        assertFalse(overlapped.get(), "two calls of one listener overlapped");
    }

    @ParameterizedTest(name = "rejected: {0}")
    @ValueSource(booleans = {true, false})
    void aChangeTheListenersExecutorRefusesIsDroppedAndTheNextOneIsHeard(boolean rejected) {
        AtomicInteger refusals = new AtomicInteger(1);
        listeners.add(heard::add, task -> {
            if (refusals.getAndDecrement() > 0) {
                // Refused as executors should, or failing otherwise, as one closed under it may.
                throw rejected ? new RejectedExecutionException("saturated") : new IllegalStateException("closed");
            }
            pool.execute(task);
        });

        listeners.fire("change 0", l -> l.accept(0));
        await().until(() -> refusals.get() == 0); // refused once
        listeners.fire("change 1", l -> l.accept(1));

        await().until(() -> !heard.isEmpty());
        assertEquals(List.of(1), heard);
    }

    @Test
    void aListenerAddedLateHearsWhatItIsToldBeforeAnyLaterChange() {
        listeners.addAndTell(heard::add, pool, "before", l -> l.accept(0));
        listeners.fire("after", l -> l.accept(1));

        await().until(() -> heard.size() == 2);
        assertEquals(List.of(0, 1), heard);
    }

    @Test
    void aListenerThatThrowsAnErrorIsLoggedAndNeitherItsNextCallsNorOtherListenersAreHeldBack() {
        List<Integer> failing = new CopyOnWriteArrayList<>();
        listeners.add(
                change -> {
                    failing.add(change);
                    throw new AssertionError("a listener's own check failed on " + change);
                },
                Runnable::run);
        listeners.add(heard::add, Runnable::run);

        listeners.fire("change 0", l -> l.accept(0));
        listeners.fire("change 1", l -> l.accept(1));

        await().until(() -> heard.size() == 2);
        assertEquals(List.of(0, 1), heard);
        assertEquals(List.of(0, 1), failing);
    }

    @Test
    void anErrorThatEscapesATaskLeavesTheTasksBehindItToRun() {
        SerialExecutor serial = SerialExecutor.onCallbacks();
        CountDownLatch secondQueued = new CountDownLatch(1);
        serial.execute(() -> {
            awaitQuietly(secondQueued);
            throw new AssertionError("escapes the task");
        });
        serial.execute(() -> heard.add(1)); // queued behind the first, which is still running
        secondQueued.countDown();

        // The Error goes on to the pool's thread, as it should: the wait must not take it for the test's own.
        await().dontCatchUncaughtExceptions().until(() -> heard.size() == 1);
        await().dontCatchUncaughtExceptions().until(serial::isIdle);
        serial.execute(() -> heard.add(2));
        await().dontCatchUncaughtExceptions().until(() -> heard.size() == 2);
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
