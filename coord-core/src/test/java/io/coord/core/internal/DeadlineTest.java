package io.coord.core.internal;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The look of a call whose deadline ran out: it waits for answers until its event, and interruptibly. */
@Timeout(30)
class DeadlineTest {
    @Test
    void aLookNeverWaitsForRoomOrTheConnectionButWaitsForAnswers() {
        Deadline look = Deadline.lookUntil(new CompletableFuture<>());
        assertFalse(look.allowsWaiting());
        assertFalse(look.waitsForConnection());
        assertFalse(look.awaitsAnswersFully());
        assertTrue(look.expired());
        assertEquals(0, look.remainingNanos());
        assertEquals("Deadline[look]", look.toString());
        assertFalse(look.lookEnded());
    }

    @Test
    void aLookAnswersWhatCameAndFailsWhatFailed() throws Exception {
        Deadline look = Deadline.lookUntil(new CompletableFuture<>());
        assertEquals("answer", look.await(CompletableFuture.completedFuture("answer")));
        IllegalStateException failure = new IllegalStateException("refused");
        ExecutionException failed =
                assertThrows(ExecutionException.class, () -> look.await(CompletableFuture.failedFuture(failure)));
        assertEquals(failure, failed.getCause());
    }

    @Test
    void aLookWaitsForAnAnswerUntilItsEventComes() throws Exception {
        CompletableFuture<Void> dropped = new CompletableFuture<>();
        Deadline look = Deadline.lookUntil(dropped);
        CompletableFuture<String> answer = new CompletableFuture<>();
        CompletableFuture<String> waited = CompletableFuture.supplyAsync(() -> {
            try {
                return look.await(answer);
            } catch (TimeoutException e) {
                return "ended: " + e.getMessage();
            } catch (InterruptedException | ExecutionException e) {
                throw new IllegalStateException(e);
            }
        });
        dropped.complete(null);
        assertEquals("ended: the look ended before the answer came", waited.get(10, TimeUnit.SECONDS));
        assertEquals("Deadline[look, ended]", look.toString());
        assertTrue(look.lookEnded());
        assertThrows(TimeoutException.class, () -> look.await(new CompletableFuture<>()), "ended already");
        assertEquals("late", look.await(CompletableFuture.completedFuture("late")), "an answer there is still taken");
    }

    @Test
    void aLookGivesUpOnAnInterrupt() throws Exception {
        Deadline look = Deadline.lookUntil(new CompletableFuture<>());
        CompletableFuture<Boolean> interrupted = new CompletableFuture<>();
        Thread waiting = new Thread(() -> {
            try {
                look.await(new CompletableFuture<>());
                interrupted.complete(false);
            } catch (InterruptedException e) {
                interrupted.complete(true);
            } catch (ExecutionException | TimeoutException e) {
                interrupted.completeExceptionally(e);
            }
        });
        waiting.start();
        await().until(() -> waiting.getState() == Thread.State.WAITING);
        waiting.interrupt();
        assertTrue(interrupted.get(10, TimeUnit.SECONDS));
    }

    @Test
    void onlyALookEndsByAnEvent() {
        for (Deadline other : List.of(
                Deadline.now(), Deadline.throughOutages(), Deadline.forever(), Deadline.after(Duration.ofNanos(1)))) {
            assertFalse(other.lookEnded(), other::toString);
        }
    }

    @Test
    void aLookNeedsItsEvent() {
        assertThrows(NullPointerException.class, () -> Deadline.lookUntil(null));
    }
}
