package io.coord.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Which callers share a read and which send one: the sender records every read, and the test answers them. */
class SingleFlightTest {
    private final List<CompletableFuture<String>> sent = new ArrayList<>();
    private final AtomicLong clock = new AtomicLong();
    private final SingleFlight<String> reads = new SingleFlight<>(this::send, clock::get);

    private CompletableFuture<String> send() {
        CompletableFuture<String> read = new CompletableFuture<>();
        sent.add(read);
        return read;
    }

    /** The answer a future already holds: a read the test did not answer fails the test instead of hanging it. */
    private static String answer(CompletableFuture<String> read) {
        assertTrue(read.isDone(), "still waiting for a read");
        return read.join();
    }

    @Test
    void aCallerWhoseChangeTheLastAnswerCoversGetsItWithoutSending() {
        clock.set(1);
        CompletableFuture<String> first = reads.sentSince(1);
        sent.get(0).complete("after change 1");
        assertEquals("after change 1", answer(first));

        // A waiter woken by change 1 that comes to ask only now: the read that answered was sent after that change.
        assertEquals("after change 1", answer(reads.sentSince(1)));
        assertEquals(1, sent.size());

        clock.set(2);
        CompletableFuture<String> second = reads.sentSince(2);
        assertEquals(2, sent.size());
        assertFalse(second.isDone());
    }

    @Test
    void callersOfOneChangeShareTheReadInFlightAndALaterChangeQueuesOneMore() {
        clock.set(1);
        CompletableFuture<String> first = reads.sentSince(1);
        assertSame(first, reads.sentSince(1));

        clock.set(2);
        CompletableFuture<String> queued = reads.sentSince(2);
        assertSame(queued, reads.sentSince(2));
        assertEquals(1, sent.size(), "the next read waits for the one in flight");

        sent.get(0).complete("after change 1");
        assertEquals(2, sent.size());
        sent.get(1).complete("after change 2");
        assertEquals("after change 2", answer(queued));
    }

    @Test
    void nextNeverTakesAnAnswerOrAReadSentBeforeTheCall() {
        CompletableFuture<String> first = reads.next();
        CompletableFuture<String> second = reads.next();
        sent.get(0).complete("one");
        sent.get(1).complete("two");
        assertEquals("one", answer(first));
        assertEquals("two", answer(second));

        CompletableFuture<String> third = reads.next();
        assertEquals(3, sent.size());
        assertFalse(third.isDone());
    }

    @Test
    void aFailedReadIsNeverSharedAfterItAnswered() {
        clock.set(1);
        CompletableFuture<String> failed = reads.sentSince(1);
        sent.get(0).completeExceptionally(new IllegalStateException("connection lost"));
        assertTrue(failed.isCompletedExceptionally());

        CompletableFuture<String> again = reads.sentSince(1);
        assertEquals(2, sent.size());
        sent.get(1).complete("read again");
        assertEquals("read again", answer(again));
    }
}
