package io.coord.core.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A leader latch or selector of this process gained or lost leadership. */
@Name("io.coord.Leadership")
@Label("Leadership")
@Category({"coord", "Election"})
@Description("A leader latch or selector gained or lost leadership")
@StackTrace(false)
public final class LeadershipEvent extends PrimitiveEvent {
    @Label("Change")
    @Description("gained or lost")
    String change;

    LeadershipEvent() {}
}
