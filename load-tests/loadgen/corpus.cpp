// The built-in corpus: a plain story written for this project (no third-party text), in the
// simple style of the small story models pagedserve is tested with. Prompts are cut from it.
#include "loadgen/workload.hpp"

namespace pagedserve::loadgen {

std::string_view builtin_corpus() {
  return R"(Once upon a time, in a small town by a wide river, there lived a girl named Lily. She had a red
kite, a brown dog called Max and a grandmother who told stories every night. One morning the wind
was strong and warm, so Lily ran to the hill behind the old mill to fly her kite. Max ran after her,
barking at the birds and the leaves and the clouds that moved fast across the sky.

At the top of the hill, Lily let the string go little by little. The kite climbed higher and higher
until it looked like a tiny red leaf. "Look, Max!" she said. "It can see the whole town!" Max wagged
his tail and sat down in the grass. Far away, the baker was opening his shop, the fisherman was
pulling his boat onto the sand, and the children were walking to school with their bags.

Then the wind changed. The kite pulled hard, and the string slipped out of Lily's hands. It flew over
the mill, over the river and into the tall trees of the forest. Lily felt sad and a little scared,
because her grandmother had made that kite for her birthday. She did not want to lose it. "We have to
find it," she told Max. Max barked once, as if he understood every word.

They walked along the river path. They met a frog sitting on a stone. "Have you seen a red kite?"
asked Lily. The frog blinked and said nothing, but it jumped toward the bridge, and Lily decided to
follow. On the bridge stood an old man with a long gray beard and a basket of apples. He smiled and
pointed at the forest. "Something red fell near the big oak tree," he said. "Be careful, the path is
muddy after the rain." Lily thanked him, and he gave her an apple for the walk.

In the forest it was cool and quiet. Sun came through the leaves in thin gold lines. Max sniffed the
ground and ran ahead. Soon they heard a soft flapping sound. There, high in the branches of the big
oak, was the red kite. Lily could not reach it. She tried to jump, and she tried to climb, but the
branches were too high and the bark was wet and slippery.

A squirrel came down the trunk and looked at her with bright black eyes. "I can help," it seemed to
say, and it ran up again, quick as a thought. It pulled the string with its small teeth until the
kite came free and floated down into Lily's arms. Lily laughed and clapped her hands. She shared her
apple with the squirrel, and Max barked a happy bark that echoed between the trees.

On the way home, the sky turned pink and orange. The baker waved from his door, the fisherman was
mending his net, and the frog was back on its stone. When Lily told her grandmother the whole story,
the old woman laughed and said that good friends come in every size. That night Lily fell asleep with
the kite beside her bed, dreaming of wind and rivers and a squirrel who could climb to the sky.

The next day was rainy, so Lily stayed inside. She drew a map of the town, the river, the bridge,
the forest and the big oak tree. She wrote small names next to each place and drew the frog, the old
man and the squirrel. Her grandmother showed her how to fold paper boats, and together they sailed
them in a bowl of water on the kitchen table. When the rain stopped, they carried the boats to the
river and watched them float away, slowly, past the mill and under the bridge, toward the sea.
)";
}

}  // namespace pagedserve::loadgen
