"""Word lists the parser-based fact reader uses (lemmas, lower case)."""

from __future__ import annotations

from observations.extract.lexicon import wordset

words = wordset  # the whitespace-separated words of a text, as a set


LIKE = words("love like enjoy adore prefer fancy")
DISLIKE = words("hate dislike detest loathe")
# what one cannot eat, each beside the others and beside a diet
INTOLERANCES = words(
    """gluten-free dairy-free lactose-intolerant sugar-free nut-free celiac coeliac
    diabetic"""
)
# the intolerances chat writes as two words ("gluten free"), which the analysis reads as one
# words chat writes with a hyphen or a space, which the analysis reads as one word
DIETS = INTOLERANCES | words(
    """vegan vegetarian pescatarian pescetarian keto paleo kosher halal teetotal sober"""
)
STATUS = words("married single divorced engaged widowed separated")
BODY_PARTS = words("knee back ankle shoulder wrist hip neck foot leg arm elbow hamstring achilles")
# what one gets or is from time to time, and plans around ("i get carsick")
AILMENTS = words("carsick car-sick seasick airsick motion-sick travel-sick queasy claustrophobic")
GENDER = words("transgender trans nonbinary non-binary cisgender genderqueer")
ORIENTATION = words("gay lesbian bisexual queer straight pansexual asexual")
SKILLED = words("good great skilled talented fluent experienced proficient decent amazing")
KEEN = words("obsessed passionate crazy mad keen")
OCCUPATIONS = words(
    """nurse teacher engineer developer programmer doctor physician student artist painter
    writer author designer lawyer attorney chef cook accountant manager scientist researcher
    professor musician singer photographer counselor counsellor therapist worker architect
    pilot firefighter officer soldier veteran mechanic electrician plumber carpenter farmer
    journalist editor consultant analyst entrepreneur freelancer barista waiter waitress
    cashier pharmacist dentist vet veterinarian librarian coach trainer instructor dancer
    actor actress athlete retiree homemaker intern surgeon paramedic psychologist biologist
    chemist physicist historian baker tutor ceo founder cto director administrator clerk
    technician assistant specialist strategist marketer recruiter paralegal midwife
    caregiver volunteer lecturer scholar economist banker broker realtor agent driver
    sailor"""
)
JOBS = words("job position role gig career post")
# what a sentence names only when it is about one's job ("my commute is 10 min now")
WORKING_LIFE = words("employer hire commute coworker colleague boss onboarding payroll")
# where one is rather than whom one works for ("I'm at home now", "at the gym")
SETTINGS = words(
    """home work school uni college office gym church class lunch dinner breakfast brunch
    practice rest peace ease war sea camp bed"""
)
VEHICLES = words("car truck van suv motorbike motorcycle scooter jeep pickup ebike e-bike")
LET_GO = words("sell scrap total crash wreck trade lose")  # what ends having a car
# makes and common models: "I bought a tesla", "my corolla" name a car without saying so
CAR_NAMES = words(
    """toyota honda ford tesla bmw audi mercedes benz volkswagen vw volvo kia hyundai nissan
    mazda subaru fiat peugeot renault skoda chevrolet chevy porsche lexus citroen opel dacia
    polestar rivian jaguar landrover suzuki mitsubishi cupra seat corolla camry prius rav4
    civic accord crv golf polo passat tiguan jetta mustang focus fiesta outback impreza
    qashqai leaf yaris clio megane octavia ioniq"""
)
# breeds a pet is named by ("we got a rescue greyhound! her name is pickle"); not words
# with another common sense ("lab", "boxer", "golden", "pointer", "shepherd")
_BREEDS = {
    **dict.fromkeys(
        words(
            """greyhound whippet lurcher labrador retriever poodle terrier beagle collie husky
            corgi pug dachshund spaniel bulldog chihuahua labradoodle cockapoo rottweiler
            dalmatian doberman schnauzer pomeranian"""
        ),
        "dog",
    ),
    **dict.fromkeys(words("kitten kitty tabby"), "cat"),
}
ROLES = words(
    """sister brother bro sibling mom mum mother mama dad father papa parent wife wifey husband
    hubby partner spouse boyfriend girlfriend bf gf fiance fiancee son daughter kid child baby
    grandma grandmother grandpa grandfather grandparent granny aunt auntie uncle cousin niece nephew
    friend bff bestie roommate flatmate coworker co-worker colleague boss manager lead mentor
    neighbor neighbour family in-laws dog cat puppy pup pet snake parrot hamster horse rabbit
    bunny turtle teacher therapist coach classmate teammate landlord doctor advisor adviser
    co-advisor supervisor tutor trainer dentist vet babysitter nanny housemate stepmom stepdad
    stepmother stepfather stepsister stepbrother"""
) | frozenset(_BREEDS)
ROLE_ALIASES = {
    **_BREEDS,
    "mom": "mother",
    "mum": "mother",
    "mama": "mother",
    "dad": "father",
    "papa": "father",
    "kid": "child",
    "baby": "child",
    "hubby": "husband",
    "wifey": "wife",
    "gf": "girlfriend",
    "bf": "boyfriend",
    "bro": "brother",
    "fiancee": "fiance",
    "grandma": "grandmother",
    "granny": "grandmother",
    "grandpa": "grandfather",
    "auntie": "aunt",
    "pup": "dog",
    "puppy": "dog",
    "bff": "best-friend",
    "bestie": "best-friend",
    "coworker": "colleague",
    "co-worker": "colleague",
    "neighbour": "neighbor",
    "boss": "manager",
    "lead": "manager",  # "my lead", "my team lead": whom one reports to
    "flatmate": "roommate",
    "housemate": "roommate",
    "adviser": "advisor",
    "stepmom": "stepmother",
    "stepdad": "stepfather",
}
# one token each: "gluten-free", not "gluten" "-" "free"; "co-advisor"
HYPHENATED_WORDS = tuple(sorted({w for w in INTOLERANCES | ROLES if "-" in w} | {"me-time"}))
# roles one has once: their keys carry no name
UNIQUE_ROLES = words(
    """wife husband partner spouse boyfriend girlfriend fiance mother father parent family
    in-laws manager landlord"""
)
# what "my <noun> is …" says of its owner
OWN_ATTRIBUTES = {
    "name": ("identity", "name"),
    "job": ("identity", "occupation"),
    "occupation": ("identity", "occupation"),
    "profession": ("identity", "occupation"),
    "employer": ("identity", "employer"),
    "company": ("identity", "employer"),
    "car": ("identity", "car"),
    "hometown": ("identity", "origin"),
    "birthday": ("identity", "birthday"),
    "bday": ("identity", "birthday"),
    "anniversary": ("identity", "anniversary"),
    "age": ("identity", "age"),
    "budget": ("constraint", "budget"),
    "diet": ("constraint", "diet"),
    "pronoun": ("identity", "pronouns"),
    "major": ("identity", "education"),
    "thesis": ("identity", "thesis"),
    "dissertation": ("identity", "thesis"),
    "salary": ("identity", "salary"),
    "income": ("identity", "salary"),
    "insurance": ("identity", "insurance"),
    "insurer": ("identity", "insurance"),
    "address": ("identity", "address"),
    "gym": ("identity", "gym"),
}
# relations only "she" or only "he" can mean, by the word they were called or their role
# (called, since an alias may lose it: "fiancee" is the role "fiance")
FEMININE = words(
    """sister mother mom mum mama wife wifey girlfriend gf fiancee daughter grandmother
    grandma granny nana aunt auntie niece stepmother stepdaughter stepsister"""
)
MASCULINE = words(
    """brother bro father dad papa husband hubby boyfriend bf fiance son grandfather grandpa
    uncle nephew stepfather stepson stepbrother"""
)
# comings and goings, which say something with a date and no object ("visiting in 10 days")
COMINGS_AND_GOINGS = words(
    "visit arrive leave fly travel return land depart relocate graduate retire emigrate"
)
# kin that chat names without "my" ("dad had the surgery")
FAMILY = words(
    """mom mum mama dad papa grandma grandpa granny nana hubby landlord landlady boss
    roommate flatmate housemate"""
)
# languages, which the tagger reads as adjectives ("learning italian")
LANGUAGES = words(
    """english spanish french german italian portuguese dutch swedish norwegian danish
    finnish polish czech hungarian romanian greek turkish russian ukrainian hebrew arabic
    persian farsi hindi urdu bengali punjabi tamil japanese korean mandarin cantonese
    chinese vietnamese thai indonesian tagalog swahili catalan basque irish welsh latin asl"""
)
GOAL_NOUNS = words("goal dream plan aim ambition hope mission resolution wish")
FAVORITE = words("favorite favourite preferred fave fav go-to")
WANT = words("want wanna wan plan hope intend aim aspire dream wish")
TRYING = words("plan hope aim try save work look think consider prepare")
GENERIC_ACTIVITIES = words(
    """play do make go watch read spend take have get try visit be practice practise learn
    create"""
)
ACTIVITY_CATEGORIES = {"drink": "drink", "eat": "food", "listen": "music", "cook": "cooking"}
# verbs that say nothing lasting about their subject on their own
LIGHT_VERBS = words(
    """be have do get go come make take know think guess mean feel hope wish see say tell ask
    wonder agree bet suppose believe imagine remember forget understand love like want need
    try seem look sound let thank appreciate miss check keep find realize realise notice
    hear talk chat show share send reply answer help glad happen appreciate cheer congratulate
    apologize apologise promise"""
)
COGNITION = words(
    """think guess believe know feel suppose reckon realize realise mean say tell admit figure
    bet swear hope wish notice remember forget suspect imagine doubt assume understand"""
)
# what is set for a day ("my interview is on friday")
EVENT_NOUNS = words(
    """interview exam test appointment surgery operation wedding party graduation flight
    trip funeral shower recital concert match race marathon meeting deadline move"""
)
# verbs whose object takes a bare infinitive ("help you move", "let me know", "saw her win")
BARE_INFINITIVE_AFTER = words("help make let have watch see saw hear feel")
# nouns and modifiers that judge rather than describe ("I'm such a mess", "a big fan")
JUDGEMENTS = words(
    """mess wreck fool idiot disaster genius pro champ sucker kid baby person guy girl
    thing one fan lot bit big huge total complete real such good bad great little
    terrible awful amazing awesome lucky happy sad"""
)
# foods a diet leaves out ("I avoid pork" is constraint:diet:pork)
FOODS = words(
    """pork meat beef fish dairy gluten sugar alcohol caffeine nuts peanuts eggs egg
    shellfish soy wheat lactose carbs chicken lamb seafood milk cheese"""
)
# objects that say too little to make a topic ("learned a lot", "had a great time")
VAGUE = words("lot lots bit thing things stuff way ways time day one few bunch kind sort")
# nouns too general to make an experience or a goal a fact ("made so much progress")
ABSTRACT = words(
    """progress difference impact self others other work way life journey experience
    support help love care fun blast joy happiness peace strength courage effort change
    goal dream chance opportunity idea step stride decision choice part role world people
    everyone everything something anything lot bit time day moment memory feeling emotion
    sense connection challenge struggle thing stuff best most much more good bad deal
    break look mind heart attention advantage sure point reason"""
)
TIME_NOUNS = words(
    """day week weekend month year morning afternoon evening night time summer winter spring
    autumn fall season moment point"""
)
# what says that something happens again and again ("daily", "every Sunday")
HABITUAL = words("daily nightly weekly weekdays weeknights weekends mornings evenings")
WEEKDAYS = words("monday tuesday wednesday thursday friday saturday sunday")
# titles typed before a name ("dr okonjo", "prof ferreira")
TITLES = ("prof", "dr", "mr", "mrs", "ms", "mx")
# days, months and feasts, which the tagger may read as names (not the months that are
# also given names: April, May, June, August)
DAYS_NAMED = WEEKDAYS | words(
    """january february march july september october november december vday valentines
    valentine christmas xmas easter halloween thanksgiving diwali hanukkah nye bday"""
)
# verbs of having or getting a relation: "I have a sister", "we adopted a puppy"
GETTING = words("have get adopt")
# what one takes as a habit, and quits: "I drink 4 flat whites a day", "I quit coffee"
CONSUMABLES = words(
    """coffee tea caffeine alcohol booze wine beer liquor soda coke sugar meat pork beef
    dairy milk cheese bread carbs chocolate candy sweets cigarette cig vape weed cannabis
    matcha kombucha juice"""
)
# coffee as a café pours it: all of it is coffee
COFFEE_DRINKS = words(
    """latte cappuccino espresso americano macchiato mocha cortado decaf white brew"""
)
