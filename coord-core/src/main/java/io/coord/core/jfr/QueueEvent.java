package io.coord.core.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/** One call on a distributed queue that offers, polls, drains or claims, committed when it returns. */
@Name("io.coord.Queue")
@Label("Queue Operation")
@Category({"coord", "Queue"})
@Description("A queue call: what it did and how many items it moved")
@StackTrace(false)
public final class QueueEvent extends Event {
    @Label("Path")
    @Description("The queue's path")
    String path;

    @Label("Operation")
    @Description("offer (offer, put, putAll), poll (poll, take, remove), drain (drainTo) or claim")
    String operation;

    @Label("Requested")
    @Description("Items offered, or the most items asked for")
    int requested;

    @Label("Items")
    @Description("Items written or taken; 0 when the call timed out or found nothing")
    int items;

    @Label("Call Time")
    @Description("From the call to its return")
    @Timespan(Timespan.NANOSECONDS)
    long callTime;

    QueueEvent() {}
}
