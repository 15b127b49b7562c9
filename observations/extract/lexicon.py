"""Word lists used by the heuristic extractor (lower-case)."""

from __future__ import annotations


def wordset(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text``."""
    return frozenset(text.split())


# Chat spellings and the words they stand for ("gonna" parses as "gon" + "na").
SPOKEN_FORMS = {
    "gon": "going",
    "wan": "want",
    "na": "to",
    "ta": "to",
    "nt": "n't",
    "bday": "birthday",
}

# Words that carry no topic: pronouns, auxiliaries, prepositions, chat filler, light verbs.
FUNCTION_WORDS = wordset(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each even ever every few for from further get gets getting
    got had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers
    herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
    just let's like lot lots me more most much must mustn't my myself no nor not now of off on
    once only or other ought our ours ourselves out over own really same shan't she she'd she'll
    she's should shouldn't so some such than that that's the their theirs them themselves then
    there there's these they they'd they'll they're they've this those though through to too
    under until up upon us very was wasn't we we'd we'll we're we've were weren't what what's
    when when's where where's which while who who's whom why why's will with won't would
    wouldn't you you'd you'll you're you've your yours yourself yourselves yeah yes yep yup ok
    okay oh hey hi hello wow haha hahaha lol aw aww omg thanks thank thx maybe kinda gonna wanna
    gotta one thing things something anything everything way ways bit quite pretty super truly
    literally already although since however etc hmm um uh ya ye go going went gone come came
    make made take took lot definitely totally absolutely actually always still sure
    """
)

# Evaluative and conversational words that carry little information in chat.
CHAT_WORDS = wordset(
    """
    cool awesome great amazing nice good glad kind sort many well bye see talk chat soon love
    feel felt feeling know think thought mean means sounds sound seems seem look looks said say
    says tell told want wanted need happy sorry wonderful fantastic incredible inspiring sweet
    lovely beautiful
    """
)

# Capitalised sentence openers that are not names.
OPENERS = wordset(
    """
    agree exactly congrats congratulations sounds anyway btw plus hope check take let keep enjoy
    remember speaking maybe also wish guess seems looks glad wow yay sorry true right definitely
    absolutely totally same good great nice awesome cool amazing
    """
)

# Adverbs that may stand between a subject and its verb ("I really love").
ADVERBS = wordset(
    """
    really also just still always never usually often sometimes totally actually definitely
    absolutely truly genuinely honestly kinda recently finally already even seriously especially
    mostly certainly probably personally ever first then once only almost hardly barely rarely
    simply completely often later soon def now nowadays currently
    """
)

# Words after a subject that are not base verbs (modals, past forms, function words).
NOT_BASE_VERBS = wordset(
    """
    can could will would shall should may might must was were had did am is are got has does
    goes went saw made took came gave found felt said told thought bought brought caught taught
    began ran wrote met left kept lost won sent spent built heard knew grew drew flew threw ate
    drove rode sang swam sat stood understood became forgot chose broke spoke woke wore fell
    held led paid put set cut hit let quit shut hurt cost slept dealt meant sold fought stuck
    struck hung dug hid lit fed fled shot lay rang drank sank stole froze rose shook forgave
    overcame underwent read gonna ought used too and or but as at in on with to for
    of the a an so alone here there not no yet then once both either neither nor own themself
    """
)


# Words that open a question rather than an imperative.
QUESTION_WORDS = wordset(
    """
    what what's how is are do does where when which who whats
    """
)

# Nouns ending in -ie, whose plural is not -y + ies ("movies" → "movie", not "movy").
IE_NOUNS = wordset(
    """
    movie cookie rookie selfie hoodie zombie brownie smoothie goalie veggie genie calorie
    prairie newbie foodie sweetie hippie auntie bestie pie tie lie die freebie birdie lassie
    """
)
