package io.coord.election;

import io.coord.testkit.InViewMode;

@InViewMode
class LeaderLatchFaultInViewModeTest extends LeaderLatchFaultTest {}
