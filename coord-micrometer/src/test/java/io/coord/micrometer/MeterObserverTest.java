package io.coord.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.coord.core.internal.Observer.AcquireOutcome;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/** The observer on its own, for what a live ZooKeeper cannot time: a close that falls inside an acquisition's start. */
class MeterObserverTest {
    @Test
    void anAcquisitionWhoseStartAClosedBindingHeardIsCountedOutAsItWasCountedIn() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MeterObserver observer = new MeterObserver(registry, UnaryOperator.identity(), new PendingGauges());
        observer.acquisitionStarted("/a", "mutex"); // registers the path's gauge
        observer.acquisitionEnded("/a", "mutex", "p", 1, AcquireOutcome.GRANTED);
        observer.close();

        // An acquisition takes its observers as it starts: a close right after tells this one of the start too.
        observer.acquisitionStarted("/a", "mutex");
        observer.acquisitionEnded("/a", "mutex", "p", 1, AcquireOutcome.GRANTED);

        assertEquals(0.0, registry.get("coord.acquire.pending").gauge().value(), "never below zero");
        assertEquals(1.0, registry.get("coord.acquire.outcomes").counter().count(), "nothing counted after close");
        assertEquals("MeterObserver[SimpleMeterRegistry]", observer.toString());
    }

    @Test
    void aRegistryThatRefusesTheGaugeStillGetsTheWaitAndTheOutcome() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        registry.counter("coord.acquire.pending", "path", "/a", "primitive", "mutex"); // the gauge's name, taken
        MeterObserver observer = new MeterObserver(registry, UnaryOperator.identity(), new PendingGauges());
        assertThrows(IllegalArgumentException.class, () -> observer.acquisitionStarted("/a", "mutex"));

        // The refusal still surfaces (Observations logs it), but only after the acquisition's own meters.
        assertThrows(
                IllegalArgumentException.class,
                () -> observer.acquisitionEnded("/a", "mutex", "p", 5, AcquireOutcome.GRANTED));

        assertEquals(
                1.0,
                registry.get("coord.acquire.outcomes")
                        .tag("outcome", "granted")
                        .counter()
                        .count());
        assertEquals(
                1,
                registry.get("coord.acquire.wait")
                        .tag("outcome", "granted")
                        .timer()
                        .count());
    }

    @Test
    void anAcquisitionWhoseGaugeTheRegistryRefusedIsCountedOutAsItWasCountedIn() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        // A meter of another type under the gauge's name and tags: the registry refuses the gauge.
        registry.counter("coord.acquire.pending", "path", "/a", "primitive", "mutex");
        PendingGauges pending = new PendingGauges();
        MeterObserver observer = new MeterObserver(registry, UnaryOperator.identity(), pending);
        assertThrows(IllegalArgumentException.class, () -> observer.acquisitionStarted("/a", "mutex"));
        observer.close();
        observer.acquisitionEnded("/a", "mutex", "p", 1, AcquireOutcome.GRANTED);

        SimpleMeterRegistry next = new SimpleMeterRegistry();
        MeterObserver later = new MeterObserver(next, UnaryOperator.identity(), pending);
        later.acquisitionStarted("/a", "mutex");
        assertEquals(1.0, next.get("coord.acquire.pending").gauge().value(), "the count never went below zero");
    }
}
