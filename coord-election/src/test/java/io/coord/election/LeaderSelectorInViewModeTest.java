package io.coord.election;

import io.coord.testkit.InViewMode;

@InViewMode
class LeaderSelectorInViewModeTest extends LeaderSelectorTest {}
