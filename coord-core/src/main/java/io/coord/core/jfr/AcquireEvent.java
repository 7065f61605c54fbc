package io.coord.core.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/** One acquisition of a lock, permit or leadership term, committed when it ends, whatever the outcome. */
@Name("io.coord.Acquire")
@Label("Acquisition")
@Category({"coord", "Leases"})
@Description("An acquisition of a coord primitive: how long it waited and how it ended")
@StackTrace(false)
public final class AcquireEvent extends PrimitiveEvent {
    @Label("Wait Time")
    @Description("From the call to its outcome")
    @Timespan(Timespan.NANOSECONDS)
    long waitTime;

    @Label("Outcome")
    @Description("granted, timed_out, cancelled or failed")
    String outcome;

    AcquireEvent() {}
}
