package io.coord.core.jfr;

import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;

/** What every event about a lock, permit or election carries: which primitive, and which participant of it. */
abstract class PrimitiveEvent extends Event {
    @Label("Path")
    @Description("The primitive's path")
    String path;

    @Label("Primitive")
    @Description("mutex, read-lock, write-lock, semaphore, leader-latch or leader-selector")
    String primitive;

    @Label("Participant")
    @Description("The participant id the primitive's nodes carry")
    String participant;

    final void of(String path, String primitive, String participant) {
        this.path = path;
        this.primitive = primitive;
        this.participant = participant;
    }
}
